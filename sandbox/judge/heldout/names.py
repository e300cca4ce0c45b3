"""Finding a repository function again by name, and its arguments in a frame (the held-out judge's box side:
record.py names what it saw, calls.py calls it). Standard library only, Python 3.9 and later; loaded
from its file, never put in sys.modules.

A function can be called again from plain data when its module can be imported and its qualified name leads to
it: a module-level function, a static or class method, or a method of a class (its instance rebuilt from plain
data, sandbox/plain.py). Nested functions, lambdas and comprehensions cannot.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

CO_VARARGS, CO_VARKEYWORDS = 0x04, 0x08
Spec = dict[str, str]
"""{"module", "qualname", "kind"}: kind is function, method, static or class."""


def target_of(code: Any, module_name: str | None) -> tuple[Spec | None, str]:
    """The name by which `code`'s function can be called again, or None and why not."""
    module = sys.modules.get(module_name or "")
    if module is None or module_name == "__main__":
        return None, "its module cannot be imported by name"
    qual = getattr(code, "co_qualname", None) or _qualname(module, code)
    if not qual or "<" in qual:
        return None, "a nested function, lambda or comprehension"
    try:
        kind, func = _walk(module, qual)
    except LookupError as e:
        return None, str(e)
    if _unwrap(func, code) is None:
        return None, f"{qual} is not the function that ran"
    return {"module": module_name or "", "qualname": qual, "kind": kind}, ""


def find(spec: Spec) -> Any:
    """The callable for a spec (a method's function, called with its instance first)."""
    module = importlib.import_module(spec["module"])
    kind, func = _walk(module, spec["qualname"])
    if kind == "class":
        owner = _owner(module, spec["qualname"])
        return getattr(owner, spec["qualname"].rsplit(".", 1)[-1])
    return func


def resolve(name: str) -> Any:
    """A class by its `module:Qual.Name`."""
    mod, _, qual = name.partition(":")
    obj: Any = importlib.import_module(mod)
    for part in qual.split("."):
        obj = getattr(obj, part)
    return obj


def arguments(frame: Any) -> list[tuple[str, str, Any]]:
    """(name, kind, value) of each parameter as the call bound it: kind p (positional), k (keyword-only),
    * (extra positional, a tuple) or ** (extra keywords, a dict)."""
    code = frame.f_code
    names = code.co_varnames
    n_pos, n_kw = code.co_argcount, code.co_kwonlyargcount
    local = frame.f_locals
    out = [(names[i], "p", local.get(names[i])) for i in range(n_pos)]
    out += [(names[i], "k", local.get(names[i])) for i in range(n_pos, n_pos + n_kw)]
    at = n_pos + n_kw
    if code.co_flags & CO_VARARGS:
        out.append((names[at], "*", local.get(names[at], ())))
        at += 1
    if code.co_flags & CO_VARKEYWORDS:
        out.append((names[at], "**", local.get(names[at], {})))
    return out


def _walk(module: Any, qual: str) -> tuple[str, Any]:
    obj: Any = module
    owner: Any = None
    for part in qual.split("."):
        owner = obj
        obj = getattr(obj, "__dict__", {}).get(part)
        if obj is None:
            raise LookupError(f"{qual} is not found by name in its module")
    if isinstance(obj, staticmethod):
        return "static", obj.__func__
    if isinstance(obj, classmethod):
        return "class", obj.__func__
    if not callable(obj):
        raise LookupError(f"{qual} is not a function")
    return ("method" if isinstance(owner, type) else "function"), obj


def _owner(module: Any, qual: str) -> Any:
    obj: Any = module
    for part in qual.split(".")[:-1]:
        obj = getattr(obj, part)
    return obj


def _unwrap(func: Any, code: Any) -> Any:
    """`func`, or what it wraps (functools.wraps), whose code is `code`; None when none is."""
    for _ in range(6):
        if func is None:
            return None
        if getattr(func, "__code__", None) is code:
            return func
        func = getattr(func, "__wrapped__", None)
    return None


def _qualname(module: Any, code: Any) -> str | None:
    """Before Python 3.11 code has no co_qualname: the module's functions and its classes' methods, searched."""
    for name, obj in list(vars(module).items()):
        if _unwrap(obj, code) is not None:
            return str(name)
        if isinstance(obj, type) and obj.__module__ == module.__name__:
            for attr, member in list(vars(obj).items()):
                inner = getattr(member, "__func__", member)
                if _unwrap(inner, code) is not None:
                    return f"{name}.{attr}"
    return None


def type_name(exc_type: type) -> str:
    mod = exc_type.__module__
    return exc_type.__qualname__ if mod == "builtins" else f"{mod}.{exc_type.__qualname__}"

"""The `patcher` command. Thin: each command reads its input, calls one library function, prints, exits.

Exit codes: 0 verified (or OK), 1 no verified patch, 2 bad input, 3 environment unavailable. No command ends
in a traceback: anything unexpected inside patcher leaves as `internal_error` (exit 1) with its trace (cliio.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from patcher.agent import Limits
from patcher.cliio import emit, err, one_line_errors, python_flag, read_input, write_stdout
from patcher.config import DEFAULT_SUITE
from patcher.errors import BadInput
from patcher.termsafe import markup_safe, plain

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)
image_app = typer.Typer(no_args_is_help=True, help="Build and manage the sandbox image.")
app.add_typer(image_app, name="image")


SUITE_HELP = ("Command that runs the pass-to-pass suite (default: [tool.patcher] suite in pyproject.toml, else "
              "python -m pytest -q).")
SETUP_HELP = ("Command that installs the dependencies (default: read from the repository's files; "
              "see docs/environments.md).")
PYTHON_HELP = ("Python X.Y the boxes run (default: [tool.patcher] python, else what the repository declares: "
               ".python-version, requires-python, tox.ini, classifiers).")


@app.command()
def fix(
    repo: Annotated[str, typer.Argument(help="Local work tree or git URL.")],
    traceback: Annotated[str, typer.Option("--traceback", help="File with the traceback, or - for stdin.")],
    test: Annotated[str | None, typer.Option("--test", help="Command that reproduces the crash.")] = None,
    suite: Annotated[str | None, typer.Option("--suite", help=SUITE_HELP)] = None,
    ref: Annotated[str | None, typer.Option("--ref", help="Commit, branch or tag (default: the work tree).")] = None,
    model: Annotated[str | None, typer.Option("--model", help="Model name (env PATCHER_MODEL).")] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", help="OpenAI-compatible endpoint.")] = None,
    engine: Annotated[str | None, typer.Option("--engine", help="agent | offline | auto (default: auto when a "
                                                "model is configured, else offline).")] = None,
    setup: Annotated[str | None, typer.Option("--setup", help=SETUP_HELP)] = None,
    python: Annotated[str | None, typer.Option("--python", help=PYTHON_HELP)] = None,
    max_rounds: Annotated[int, typer.Option("--max-rounds", min=1)] = 30,
    attempts: Annotated[int, typer.Option("--attempts", min=1, max=10, help="Verifications the agent's diff may "
                                          "get; a rejected one is explained to the agent, which goes on.")] = 3,
    max_cost: Annotated[float | None, typer.Option("--max-cost", help="USD.")] = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Agent wall-clock seconds.")] = 900.0,
    offline_limit: Annotated[int, typer.Option("--offline-limit", min=0, help="Most template candidates the "
                                               "offline engine tries.")] = 200,
    offline_budget: Annotated[float, typer.Option("--offline-budget", help="Seconds the offline engine may "
                                                  "spend trying them.")] = 120.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    out: Annotated[Path | None, typer.Option("--out", help="Also write the output to this file.")] = None,
) -> None:
    """Repair the crash; print the diff only when the repository's tests prove it."""
    from patcher.model import ModelConfig
    from patcher.pipeline import run_job
    from patcher.request import job_request, job_spec

    with one_line_errors(as_json):
        if engine not in (None, "agent", "offline", "auto"):
            raise BadInput(f"--engine must be agent, offline or auto, not {engine!r}")
        text = read_input(traceback, "traceback")
        request = job_request(repo=repo, ref=ref, traceback=text, test_command=test, suite_command=suite,
                              engine=engine, setup=setup, python=python, attempts=attempts, offline_limit=offline_limit,
                              offline_budget_s=offline_budget,
                              limits=Limits(max_rounds=max_rounds, max_cost_usd=max_cost, timeout_s=timeout))
        # flags name a model; whether one is used, and the environment's otherwise, is the pipeline's rule
        config = ModelConfig.from_env(model=model, base_url=base_url) if model or base_url else None
        spec = job_spec(request, model=config)
        with err.status("starting", spinner="dots") as status:
            result = run_job(spec, progress=lambda phase: status.update(markup_safe(phase)))
        emit(result, as_json, out)


@app.command("verify")
def verify_cmd(
    repo: Annotated[str, typer.Argument(help="Local work tree or git URL.")],
    patch: Annotated[str, typer.Option("--patch", help="The diff to verify, or - for stdin.")],
    ref: Annotated[str | None, typer.Option("--ref")] = None,
    test: Annotated[str | None, typer.Option("--test", help="Command that reproduces the crash.")] = None,
    suite: Annotated[str | None, typer.Option("--suite", help=SUITE_HELP)] = None,
    traceback: Annotated[str | None, typer.Option("--traceback", help="The crash it claims to fix.")] = None,
    setup: Annotated[str | None, typer.Option("--setup", help=SETUP_HELP)] = None,
    python: Annotated[str | None, typer.Option("--python", help=PYTHON_HELP)] = None,
    record: Annotated[Path | None, typer.Option("--record", help="When verified (or unjudged: the gate then needs "
                                                "--accept-unjudged), write the signed record (DSSE envelope) here; "
                                                "needs a signing key.")] = None,
    signing_key: Annotated[Path | None, typer.Option("--signing-key", envvar="PATCHER_SIGNING_KEY",
                                                     help="PEM Ed25519 private key that signs --record.")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Re-verify a diff from scratch in fresh containers (e.g. on a base that moved); exit 0 only when verified
    (for merge gates); with --record, also write the signed record `patcher gate` checks."""
    from patcher.pipeline import verify_patch
    from patcher.review import AttestConfig, attest, load_private_key

    with one_line_errors(as_json):
        python_flag(python)
        diff = read_input(patch, "patch")
        tb = read_input(traceback, "traceback") if traceback else None
        if record is not None:
            if signing_key is None:
                raise BadInput("--record needs a signing key: --signing-key FILE or PATCHER_SIGNING_KEY")
            load_private_key(signing_key)  # a bad key is bad input now, not after minutes of verification
        with err.status("verifying", spinner="dots") as status:
            result = verify_patch(repo, diff, ref=ref, test_command=test, suite_command=suite, traceback=tb,
                                  setup=setup, python=python, progress=lambda phase: status.update(markup_safe(phase)))
        if record is not None and signing_key is not None and result.status in ("verified", "unjudged"):
            record.write_text(json.dumps(attest(result.as_json(), AttestConfig(signing_key=signing_key)), indent=2))
            err.print(f"signed record: {plain(str(record))}", markup=False, highlight=False, soft_wrap=True)
        emit(result, as_json, None)


@app.command()
def trace(
    run_or_file: Annotated[str, typer.Argument(help="A trace .jsonl, a directory of traces, or a run id.")],
    sql: Annotated[str | None, typer.Option("--sql", help="DuckDB SQL over a view named `events`.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Read a run's trace round by round (what went wrong, and when), or query traces with SQL."""
    from patcher.trace import trace_command

    with one_line_errors():
        write_stdout(trace_command(run_or_file, sql, as_json))


@app.command()
def replay(
    trace_file: Annotated[str, typer.Argument(help="The JSONL trace of the run to replay.")],
    repo: Annotated[str | None, typer.Option("--repo", help="Where the repository is now (default: as recorded).")]
    = None,
    traceback: Annotated[str | None, typer.Option("--traceback", help="The traceback file, for traces that do "
                                                  "not record it.")] = None,
    save_test: Annotated[Path | None, typer.Option("--save-test", help="Also write a pytest regression case into "
                                                   "this directory (when the replay reproduces the run).")] = None,
) -> None:
    """Re-run a recorded run with its recorded model replies; exit 0 when the same tool calls and ending happen."""
    from patcher.replay import replay_command

    with one_line_errors():
        tb = read_input(traceback, "traceback") if traceback else None
        text, code = replay_command(trace_file, repo, tb, save_test)
        write_stdout(text)
    raise typer.Exit(code)


@image_app.command("build")
def image_build(base: Annotated[str | None, typer.Option("--base", help="Base image (default: python slim, "
                                                          "or an offline Debian base where no registry answers).")]
                = None,
                python: Annotated[str | None, typer.Option("--python", help="Build the image of Python X.Y (see "
                                                           "`patcher doctor` for the versions this machine can have).")]
                = None) -> None:
    """Build the sandbox image (cached: a second build takes seconds)."""
    from patcher.env import build_image

    with one_line_errors():
        python_flag(python)
        tag = build_image(base, log=lambda m: err.print(m, markup=False, highlight=False), python=python)
    typer.echo(tag)


@image_app.command("ls")
def image_ls() -> None:
    """List environment images (cached by dependency hash): tag, size, created, last used, inputs."""
    from patcher.env import EnvConfig, list_env_images, table
    from patcher.sandbox import docker_client

    with one_line_errors():
        client = docker_client()
        typer.echo(table(list_env_images(client, EnvConfig())), nl=False)


@image_app.command("prune")
def image_prune(
    remove_all: Annotated[bool, typer.Option("--all", help="Remove every environment image.")] = False,
    max_gb: Annotated[float | None, typer.Option("--max-gb", help="Size cap (default: EnvConfig.max_gb).")] = None,
) -> None:
    """Remove environment images, least recently used first, down to the size cap (or all); one built or used in
    the last 15 minutes is kept unless --all (another job may be about to use it)."""
    from patcher.env import EnvConfig, prune
    from patcher.sandbox import docker_client

    with one_line_errors():
        client = docker_client()
        for tag in prune(client, EnvConfig(), max_gb=max_gb, remove_all=remove_all):
            typer.echo(f"removed {tag}")


@app.command()
def doctor() -> None:
    """Check the Docker daemon, the sandbox image and the model endpoint; say what to do."""
    from patcher.doctor import run_doctor

    with one_line_errors():
        checks, code = run_doctor()
        for check in checks:
            typer.echo(check.line())
    raise typer.Exit(code)


@app.command()
def gate(
    attestation: Annotated[Path, typer.Option("--attestation", help="The signed record (DSSE envelope).")],
    public_key: Annotated[Path, typer.Option("--public-key", help="PEM Ed25519 public key of the server.")],
    patch: Annotated[Path | None, typer.Option("--patch", help="The diff to be merged (onto --base, default HEAD).")]
    = None,
    base: Annotated[str | None, typer.Option("--base", help="The branch or commit merged into.")] = None,
    head: Annotated[str | None, typer.Option("--head", help="The pull request's head (with --base).")] = None,
    repo: Annotated[Path, typer.Option("--repo", help="The repository checked against.")] = Path("."),
    suite: Annotated[str, typer.Option("--suite", help="The suite command the record must have run.")]
    = DEFAULT_SUITE,
    require_approval: Annotated[bool, typer.Option("--require-approval", help="Also require an approval by "
                                                   "someone other than the submitter.")] = False,
    accept_unjudged: Annotated[bool, typer.Option("--accept-unjudged", help="Also accept a record whose tests "
                                                  "prove the change but whose judges could not all judge it.")]
    = False,
) -> None:
    """Merge gate: exit 0 only when a valid signed record proves this change verified on this base."""
    from patcher.review import run_gate

    with one_line_errors():
        code, line = run_gate(patch, attestation, public_key, require_approval, base=base, head=head, repo=repo,
                              suite=suite, accept_unjudged=accept_unjudged)
        typer.echo(plain(line), err=code != 0)
    raise typer.Exit(code)


@app.command()
def worker() -> None:
    """Run queued jobs from the shared store on this host's Docker daemon (same PATCHER_* settings as serve;
    no tokens or signing key needed); SIGTERM drains."""
    import logging

    from patcher.server import load_settings, preflight, run_worker

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    with one_line_errors():
        settings = load_settings(worker=True)
        preflight(settings)
        run_worker(settings)


@app.command()
def serve(
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="Port to listen on.")] = 8000,
) -> None:
    """Serve the HTTP API and the review pages; jobs run in a worker pool (settings: PATCHER_* env)."""
    from patcher.server import serve as run_server

    with one_line_errors():
        run_server(host, port)

"""The images a job's box runs: the sandbox image of the repository's Python (`patcher image build [--python
X.Y]`, an offline Debian base when no registry answers) and, for a repo with dependencies, an environment image
made once per dependency set by a setup container whose only way out is an allowlisting proxy.
"""

from patcher.env.build import ensure_env_image, setup_of
from patcher.env.cache import list_env_images, prune, table
from patcher.env.config import EnvConfig
from patcher.env.image import build_image, image_status
from patcher.env.pip import index_credentials, pip_settings, scrub
from patcher.env.pythons import PythonChoice, PythonPlan, python_lines, python_plan
from patcher.env.pyversion import crash_python
from patcher.env.symptoms import import_symptom, setup_symptom

__all__ = ["EnvConfig", "PythonChoice", "PythonPlan", "build_image", "crash_python", "ensure_env_image",
           "image_status", "import_symptom", "index_credentials", "list_env_images", "pip_settings", "prune",
           "python_lines", "python_plan", "scrub", "setup_of", "setup_symptom", "table"]

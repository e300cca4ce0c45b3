"""The images a job's box runs: the sandbox image of the repository's Python (`patcher image build [--python
X.Y]`, an offline Debian base when no registry answers) and, for a repo with dependencies, an environment image
made once per dependency set by a setup container whose only way out is an allowlisting proxy.
"""

from patcher.env.build import ensure_env_image, setup_of
from patcher.env.cache import list_env_images, prune, table
from patcher.env.config import EnvConfig
from patcher.env.image import build_image, image_status
from patcher.env.pip import index_credentials, pip_settings, scrub
from patcher.env.pythons import PythonChoice, job_python, python_lines

__all__ = ["EnvConfig", "PythonChoice", "build_image", "ensure_env_image", "image_status", "index_credentials",
           "job_python", "list_env_images", "pip_settings", "prune", "python_lines", "scrub", "setup_of", "table"]

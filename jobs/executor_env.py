"""Prints the pip command that installs what Spark executors need (the `executor` dependency group) at
this environment's versions: run it where the driver runs, run its output on every node.

    python -m jobs.executor_env
"""

import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # as a file, too
    from spark_stages.executors import install_command

    print(install_command())

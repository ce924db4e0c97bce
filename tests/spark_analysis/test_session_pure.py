"""Session checks that need no JVM: master URL validation and Java discovery."""

import socket

import pytest

from spark_analysis.errors import BadMasterURL, JavaMissing
from spark_analysis.session import find_java, validate_master


@pytest.mark.parametrize("url", ["local", "local[2]", "local[*]", "local[4,2]", "local-cluster[2,1,1024]",
                                 "yarn", "k8s://https://127.0.0.1:6443"])
def test_accepted_master_urls(url):
    assert validate_master(url) == url


@pytest.mark.parametrize("url", ["", "lokal[2]", "local[0]", "local[x]", "spark://", "spark://host",
                                 "http://127.0.0.1:7077", "spark://127.0.0.1:notaport"])
def test_malformed_master_urls_are_rejected_with_a_hint(url):
    with pytest.raises(BadMasterURL, match="bad Spark master URL"):
        validate_master(url)


def test_unreachable_standalone_master_fails_fast():
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens on it
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(BadMasterURL, match="does not answer"):
        validate_master(f"spark://127.0.0.1:{port}", probe_timeout=1.0)


def test_reachable_standalone_master_passes():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        url = f"spark://127.0.0.1:{s.getsockname()[1]}"
        assert validate_master(url) == url


def test_missing_java_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nojava"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(JavaMissing, match="Java"):
        find_java()


def test_java_found_here():
    assert find_java().endswith("java")

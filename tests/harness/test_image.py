"""The base image recipe: input hashes, tags, the CLI, and (jepsen) a cached build."""

import pytest

from harness import image


def test_tags_change_with_their_inputs(monkeypatch, tmp_path):
    first = image.base_hash()
    monkeypatch.setattr(image, "PACKAGES", [*image.PACKAGES, "strace"])
    assert image.base_hash() != first
    wheels = tmp_path / "w"
    wheels.mkdir()
    (wheels / "a-1.0-py3-none-any.whl").write_text("x")
    tag1 = image.node_tag("kraftcheck-base:x", wheels)
    (wheels / "b-2.0-py3-none-any.whl").write_text("y")
    assert image.node_tag("kraftcheck-base:x", wheels) != tag1
    assert tag1.startswith("kraftcheck-node:")


def test_dockerfile_installs_node_requirements_offline():
    text = image.DOCKERFILE.format(base="kraftcheck-base:x")
    assert text.startswith("FROM kraftcheck-base:x")
    assert "--no-index" in text and all(r in text for r in image.NODE_REQUIREMENTS)


def test_missing_engine_gives_the_local_hint(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(image.ImageError, match="--backend local"):
        image.docker_client()


@pytest.mark.jepsen
def test_ensure_image_is_cached_and_has_the_tools():
    try:
        client = image.docker_client()
    except image.ImageError as exc:
        pytest.skip(str(exc))
    tag = image.ensure_image()
    assert image.ensure_image() == tag  # second call: nothing to rebuild
    out = client.containers.run(
        tag,
        ["sh", "-c", "python3 --version; /opt/venv/bin/python -c 'import kafka, crc32c, mfusepy'; "
                     "for t in iptables fusermount3 ip nsenter; do command -v $t; done; ls /usr/lib/x86_64-linux-gnu/faketime"],
        remove=True, network_mode="none",
    ).decode()
    assert "Python 3.11" in out and "iptables" in out and "fusermount3" in out and "libfaketime" in out

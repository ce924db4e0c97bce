"""The Docker base image, built without any registry: debootstrap + ``docker import`` + host wheels.

Two layers, each tagged by a hash of its inputs and rebuilt only when those change:
1. ``kraftcheck-base:<h1>``: ``debootstrap --variant=minbase bookworm`` into a temporary folder with
   ``PACKAGES`` (python3 = 3.11 as on the host, python3-venv, iproute2, iptables, fuse3, libfaketime,
   procps, iputils-ping, netcat-openbsd), tarred into the cache (``rootfs-<h1>.tar``) and
   ``docker import``-ed. h1 = hash(suite, mirror, package list, recipe version). The downloaded .deb
   files are cached too (``debs/``), so a rebuild after a recipe change downloads nothing.
2. ``kraftcheck-node:<h2>``: a ``docker build`` FROM the imported image (no registry needed) that creates
   ``/opt/venv`` and installs ``NODE_REQUIREMENTS`` from wheels downloaded on the host into the cache
   (``pip download`` for cp311 manylinux). h2 = hash(h1, requirements, wheel file names, Dockerfile).

The project source is *not* in the image: containers bind-mount it read-only at ``/kraftcheck`` (with
``PYTHONPATH=/kraftcheck``), so code changes need no rebuild. The cache is ``$KRAFTCHECK_CACHE`` or
``~/.cache/kraftcheck``.

Variants: a node that needs more Debian packages than ``PACKAGES`` (a system under test's storage node:
``postgresql``, named by its role's ``packages``) runs from a variant, ``ensure_image(packages)``: the same
two layers with those packages added to the debootstrap, so the extra packages and their dependencies are
resolved and installed by debootstrap itself (its ``policy-rc.d`` keeps their services from starting in
the chroot). A variant's hashes include its extra packages, so it gets tags of its own, is built the first
time a run needs it and then reused, and downloads only the .debs the shared ``debs/`` cache lacks (the
host fetches them; containers have no route out). Without extra packages the tags are the plain image's.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterable
from pathlib import Path

import docker

SUITE = "bookworm"
MIRROR = os.environ.get("KRAFTCHECK_DEBIAN_MIRROR", "http://deb.debian.org/debian")
RECIPE_VERSION = "1"
PACKAGES = [
    "python3",
    "python3-venv",
    "python3-pip",
    "iproute2",
    "iptables",
    "fuse3",
    "libfaketime",
    "procps",
    "iputils-ping",
    "netcat-openbsd",
    "ca-certificates",
]
# What node processes import: the wire codec (kafka-python), CRC-32C, and mfusepy for lazyfs.
NODE_REQUIREMENTS = ["kafka-python>=3.0.12,<4", "crc32c>=2.7,<3", "mfusepy>=3.0,<4"]
BASE_REPO = "kraftcheck-base"
NODE_REPO = "kraftcheck-node"
VENV_PYTHON = "/opt/venv/bin/python"
DOCKERFILE = f"""FROM {{base}}
COPY wheels /tmp/wheels
RUN python3 -m venv /opt/venv \\
 && /opt/venv/bin/pip install --no-index --find-links /tmp/wheels {' '.join(repr(r) for r in NODE_REQUIREMENTS)} \\
 && rm -rf /tmp/wheels
ENV PATH=/opt/venv/bin:/usr/sbin:/usr/bin:/sbin:/bin PYTHONPATH=/kraftcheck PYTHONUNBUFFERED=1
"""


class ImageError(RuntimeError):
    """The image cannot be built here (the message says why and what to do)."""


def cache_dir() -> Path:
    """The build cache (debs, rootfs tarballs, wheels)."""
    path = Path(os.environ.get("KRAFTCHECK_CACHE") or Path.home() / ".cache" / "kraftcheck")
    path.mkdir(parents=True, exist_ok=True)
    return path


def _hash(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:12]


def extra_packages(packages: Iterable[str] = ()) -> list[str]:
    """The packages a variant adds to ``PACKAGES`` (sorted, without repeats or ones the base has)."""
    return sorted(set(packages) - set(PACKAGES))


def base_hash(packages: Iterable[str] = ()) -> str:
    """Hash of the base layer's inputs (with a variant's extra ``packages``, if any)."""
    extra = extra_packages(packages)
    if not extra:  # the plain image keeps the hash it always had
        return _hash(SUITE, MIRROR, sorted(PACKAGES), RECIPE_VERSION)
    return _hash(SUITE, MIRROR, sorted(PACKAGES), RECIPE_VERSION, extra)


def docker_client():
    """A docker SDK client, or ImageError with the hint to use the local backend."""
    try:
        client = docker.from_env(timeout=600)
        client.ping()
        return client
    except Exception as exc:
        raise ImageError(
            f"no Docker engine reachable ({type(exc).__name__}: {exc}); start dockerd, or use --backend local"
        ) from exc


def _image_exists(client, tag: str) -> bool:
    try:
        client.images.get(tag)
        return True
    except Exception:
        return False


def ensure_debootstrap() -> str:
    """Path of debootstrap, installing it with apt-get when missing (needs root)."""
    path = shutil.which("debootstrap") or (os.path.exists("/usr/sbin/debootstrap") and "/usr/sbin/debootstrap")
    if path:
        return path
    if os.geteuid() != 0:
        raise ImageError("debootstrap is missing and installing it needs root: sudo apt-get install -y debootstrap")
    print("[kraftcheck] installing debootstrap (apt-get)", file=sys.stderr, flush=True)
    subprocess.run(["apt-get", "update", "-q"], check=False)
    subprocess.run(["apt-get", "install", "-y", "-q", "debootstrap"], check=True)
    return shutil.which("debootstrap") or "/usr/sbin/debootstrap"


def build_rootfs_tarball(log=print, packages: Iterable[str] = ()) -> Path:
    """debootstrap the base system (and a variant's extra ``packages``) into a temporary folder and tar it
    into the cache (cached; concurrent builds of one variant wait for each other)."""
    tarball = cache_dir() / f"rootfs-{base_hash(packages)}.tar"
    if tarball.exists():
        return tarball
    with open(cache_dir() / f"rootfs-{base_hash(packages)}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if tarball.exists():  # another process built it while we waited
            return tarball
        return _debootstrap(tarball, [*PACKAGES, *extra_packages(packages)], log)


def _debootstrap(tarball: Path, packages: list[str], log) -> Path:
    if os.geteuid() != 0:
        raise ImageError("debootstrap needs root; run 'kraftcheck image build' as root")
    debootstrap = ensure_debootstrap()
    debs = cache_dir() / "debs"
    debs.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kraftcheck-rootfs-") as tmp:
        root = Path(tmp) / "rootfs"
        argv = [debootstrap, "--variant=minbase", f"--cache-dir={debs}", f"--include={','.join(packages)}",
                SUITE, str(root), MIRROR]
        log(f"debootstrap: {' '.join(argv)}")
        done = subprocess.run(argv, capture_output=True, text=True, timeout=1800, check=False)
        if done.returncode != 0:
            raise ImageError(f"debootstrap failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
        # Keep the image small: apt lists and the deb cache are not needed at run time.
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
            shutil.rmtree(root / junk, ignore_errors=True)
        partial = tarball.with_suffix(".partial")
        subprocess.run(["tar", "-C", str(root), "--numeric-owner", "-cf", str(partial), "."], check=True)
        os.replace(partial, tarball)
    return tarball


def ensure_base(client, log=print, packages: Iterable[str] = ()) -> str:
    """The imported base image tag (import from the cached tarball when missing)."""
    tag = f"{BASE_REPO}:{base_hash(packages)}"
    if _image_exists(client, tag):
        return tag
    tarball = build_rootfs_tarball(log, packages)
    log(f"docker import {tarball.name} -> {tag}")
    done = subprocess.run(["docker", "import", "--change", "CMD [\"/bin/bash\"]", str(tarball), tag],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ImageError(f"docker import failed: {done.stderr.strip()}")
    return tag


def fetch_wheels(log=print) -> Path:
    """Download the node requirements as cp311 manylinux wheels into the cache (no-op when present)."""
    wheels = cache_dir() / "wheels" / _hash(NODE_REQUIREMENTS)
    marker = wheels / ".complete"
    if marker.exists():
        return wheels
    wheels.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "pip", "download", "--only-binary=:all:", "--python-version", "3.11",
            "--implementation", "cp", "--platform", "manylinux2014_x86_64", "--platform",
            "manylinux_2_17_x86_64", "--platform", "any", "-d", str(wheels), *NODE_REQUIREMENTS]
    log("pip download: " + " ".join(NODE_REQUIREMENTS))
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False)
    if done.returncode != 0:
        raise ImageError(f"pip download failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    marker.write_text("ok\n")
    return wheels


def node_tag(base_tag: str, wheels: Path) -> str:
    """The node image tag for a base tag and wheel set."""
    names = sorted(p.name for p in wheels.glob("*.whl"))
    return f"{NODE_REPO}:{_hash(base_tag, NODE_REQUIREMENTS, names, DOCKERFILE)}"


def ensure_image(log=None, packages: Iterable[str] = ()) -> str:
    """Build (if needed) and return the node image tag, of the variant with ``packages`` when they are more
    than the base has. Raises ImageError with a clear message."""
    log = log or (lambda msg: print(f"[kraftcheck] {msg}", file=sys.stderr, flush=True))
    client = docker_client()
    if extra_packages(packages):
        log(f"node image variant with {', '.join(extra_packages(packages))} (built once, then cached)")
    base = ensure_base(client, log, packages)
    wheels = fetch_wheels(log)
    tag = node_tag(base, wheels)
    if _image_exists(client, tag):
        return tag
    log(f"docker build {tag} (FROM {base}, {len(list(wheels.glob('*.whl')))} wheels)")
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        data = DOCKERFILE.format(base=base).encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        tar.add(str(wheels), arcname="wheels")
    context.seek(0)
    try:
        client.images.build(fileobj=context, custom_context=True, tag=tag, rm=True, forcerm=True,
                            labels={"kraftcheck": "1"})
    except Exception as exc:
        raise ImageError(f"docker build of {tag} failed: {exc}") from exc
    return tag


def status() -> dict:
    """What exists: expected tags, whether each is present, the cache contents."""
    out = {"base_tag": f"{BASE_REPO}:{base_hash()}", "cache": str(cache_dir())}
    out["rootfs_tarball"] = (cache_dir() / f"rootfs-{base_hash()}.tar").exists()
    wheels = cache_dir() / "wheels" / _hash(NODE_REQUIREMENTS)
    out["wheels_cached"] = (wheels / ".complete").exists()
    try:
        client = docker_client()
    except ImageError as exc:
        out["docker"] = str(exc)
        return out
    out["base_present"] = _image_exists(client, out["base_tag"])
    if out["wheels_cached"]:
        out["node_tag"] = node_tag(out["base_tag"], wheels)
        out["node_present"] = _image_exists(client, out["node_tag"])
    return out

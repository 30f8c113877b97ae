"""The node's side of `wirespeed setup`, run by the agent: read what the node has, install packages (as root),
fetch or receive sources, build NCCL and nccl-tests (as the user), and check that what was built loads.

Builds take a lock beside their directory (two nodes sharing a home over NFS build once), keep their log in the
directory, write their manifest only once everything is verified, and say every two seconds how far they are.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import fcntl
import glob
import json
import os
import re
import shutil
import sys
import tarfile
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from wirespeed.adapters import process
from wirespeed.core import toolchain as tc
from wirespeed.core.parsers import fatbin

APT_LOCK_WAIT_S = 600  # DGX OS runs unattended-upgrades after boot: wait for dpkg's lock instead of failing
EVERY_S = 2.0


def root() -> Path:
    return Path.home() / tc.ROOT


def _run(argv: Sequence[str], timeout_s: float = 60.0, env: dict[str, str] | None = None) -> tuple[int, str]:
    done = process.run_process(argv, timeout_s=timeout_s, env=env)
    if done.spawn_error is not None:
        missing = done.spawn_error == os.strerror(errno.ENOENT)
        return 127, f"{argv[0]}: not installed" if missing else done.spawn_error
    if done.timed_out or done.returncode is None:
        return 127, f"{argv[0]}: stopped after {timeout_s:g} s"
    return done.returncode, done.stdout + done.stderr


# ------------------------------------------------------------------------------------------------------- probe


def _os_release() -> dict[str, str]:
    fields: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/etc/os-release").read_text().splitlines():
            name, _, value = line.partition("=")
            fields[name.strip()] = value.strip().strip('"')
    return fields


def _packages(names: Sequence[str]) -> dict[str, bool]:
    """dpkg's view: `ii ` is installed; a name dpkg has never heard of is not printed (and exits 1)."""
    _, out = _run(["dpkg-query", "-W", "-f=${Package}\t${db:Status-Abbrev}\n", *names])
    installed = {
        line.split("\t")[0] for line in out.splitlines() if "\t" in line and line.split("\t")[1].startswith("ii")
    }
    return {name: name in installed for name in names}


def find_cuda() -> tuple[str | None, str | None, list[int]]:
    candidates = [os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"]
    on_path = shutil.which("nvcc")
    if on_path:
        candidates.append(str(Path(os.path.realpath(on_path)).parent.parent))
    home = next((c for c in candidates if c and os.access(os.path.join(c, "bin", "nvcc"), os.X_OK)), None)
    if home is None:
        return None, None, []
    nvcc = os.path.join(home, "bin", "nvcc")
    _, out = _run([nvcc, "--version"])
    match = re.search(r"release (\d+\.\d+)", out)
    code, listed = _run([nvcc, "--list-gpu-code"])
    archs = [int(m) for m in re.findall(r"sm_(\d+)", listed)] if code == 0 else []
    return home, match.group(1) if match else None, archs


def _mpi_home() -> str | None:
    """OpenMPI's prefix as nccl-tests wants it (MPI_HOME/include/mpi.h, MPI_HOME/lib/libmpi.so): mpicc knows."""
    code, out = _run(["mpicc", "--showme:incdirs"])
    for incdir in out.split() if code == 0 else []:
        if os.path.exists(os.path.join(incdir, "mpi.h")):
            return str(Path(incdir).parent)
    return None


def _nccl_header_version(home: str) -> str | None:
    try:
        text = Path(home, "include", "nccl.h").read_text(errors="replace")
    except OSError:
        return None
    parts = [re.search(rf"#define NCCL_{name}\s+(\d+)", text) for name in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(m.group(1) for m in parts if m) if all(parts) else None


def _nccl_home(library: str) -> str | None:
    lib_dir = Path(library).parent
    for home in (lib_dir.parent, Path("/usr")):
        if (home / "include" / "nccl.h").exists() and (home == lib_dir.parent or str(lib_dir).startswith("/usr/lib")):
            return str(home)
    return None


def _nccl_libraries() -> list[str]:
    found: list[str] = []
    _, out = _run(["ldconfig", "-p"])
    found += [m.group(1) for m in re.finditer(r"libnccl\.so\.2 \(.*?\) => (\S+)", out)]
    for home in (os.environ.get("NCCL_HOME", ""), "/usr/local/nccl", "/opt/nccl"):
        if home and os.path.exists(os.path.join(home, "lib", "libnccl.so.2")):
            found.append(os.path.join(home, "lib", "libnccl.so.2"))
    found += sorted(glob.glob(str(root() / "nccl" / "*" / "build" / "lib" / "libnccl.so.2")))
    unique: dict[str, str] = {}
    for path in found:
        unique.setdefault(os.path.realpath(path), path)
    return list(unique.values())


def _nccl_install(library: str) -> dict[str, Any]:
    home = _nccl_home(library)
    version = _nccl_header_version(home) if home else None
    if version is None:
        match = re.search(r"libnccl\.so\.(\d+\.\d+\.\d+)", os.path.realpath(library))
        version = match.group(1) if match else None
    try:
        with open(library, "rb") as handle:
            archs: str | None = fatbin.encode(fatbin.architectures(handle.read()))
    except (OSError, ValueError):
        archs = None
    ours = os.path.realpath(library).startswith(os.path.realpath(root() / "nccl") + os.sep)
    return {"library": library, "home": home, "version": version, "archs": archs, "built_by_wirespeed": ours}


def _resolved(ldd_text: str, soname_prefix: str) -> str | None:
    """ldd's `\tlibnccl.so.2 => /path/libnccl.so.2 (0x...)`: the path, "not found", or None when not linked."""
    for line in ldd_text.splitlines():
        name, arrow, rest = line.strip().partition(" => ")
        if arrow and name.startswith(soname_prefix):
            return "not found" if rest.startswith("not found") else rest.split(" (")[0]
    return None


def check_tree(tree: Path, manifest: dict[str, Any]) -> str | None:
    """Why a built nccl-tests tree cannot be trusted, or None: every binary there, libnccl resolving to the NCCL it
    was built against (with its library path), libmpi found, and `all_reduce_perf -h` printing its usage."""
    env = {**os.environ, "LD_LIBRARY_PATH": ":".join(manifest.get("library_path", []))}
    for binary in tc.NCCL_TESTS_BINARIES:
        path = tree / "build" / binary
        if not os.access(path, os.X_OK):
            return f"{path} missing"
        code, out = _run(["ldd", str(path)], env=env)
        if code != 0:
            return f"ldd {path}: {out.strip()[:120]}"
        nccl, mpi = _resolved(out, "libnccl.so"), _resolved(out, "libmpi.so")
        if nccl in (None, "not found"):
            return f"{binary}: libnccl.so.2 => not found"
        if os.path.realpath(nccl) != os.path.realpath(manifest["nccl_library"]):
            return f"{binary}: libnccl resolves to {nccl}, not {manifest['nccl_library']}"
        if mpi in (None, "not found"):
            return f"{binary}: libmpi => {mpi or 'not linked (built without MPI=1)'}"
    code, out = _run([str(tree / "build" / "all_reduce_perf"), "-h"], timeout_s=60, env=env)
    return None if "USAGE:" in out else f"all_reduce_perf -h: exit {code}: {out.strip()[-160:]}"


def _builds() -> list[dict[str, Any]]:
    base = root() / "nccl-tests"
    current = os.path.realpath(base / tc.CURRENT) if (base / tc.CURRENT).is_symlink() else None
    builds = []
    for manifest_path in sorted(base.glob(f"*/{tc.MANIFEST}")):
        tree = manifest_path.parent
        try:
            manifest = json.loads(manifest_path.read_text())
            why = check_tree(tree, manifest)
            builds.append({
                "key": tree.name, "path": str(tree), "nccl_version": str(manifest["nccl_version"]),
                "arch": str(manifest["arch"]), "nccl_library": str(manifest["nccl_library"]),
                "library_path": [str(p) for p in manifest["library_path"]], "loads": why is None,
                "current": current == os.path.realpath(tree), "why_not": why,
            })  # fmt: skip
        except (OSError, ValueError, KeyError, TypeError):
            continue  # a tree without a readable manifest is not one of ours to trust
    return builds


def probe() -> dict[str, Any]:
    """Everything the plan needs, as one JSON object (`NodeToolchain.from_json`)."""
    release = _os_release()
    apt = bool(shutil.which("apt-get") and shutil.which("dpkg-query"))
    code, out = _run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"])
    capabilities = [line.strip() for line in out.splitlines() if line.strip()] if code == 0 else []
    gpu_error = None if code == 0 else (out.strip().splitlines() or ["nvidia-smi failed"])[-1][:160]
    cuda_home, nvcc_version, nvcc_archs = find_cuda()
    return {
        "home": str(root()), "os_id": release.get("ID", ""), "os_like": release.get("ID_LIKE", "").split(),
        "os_name": release.get("PRETTY_NAME", ""), "package_manager": "apt" if apt else None,
        "packages": _packages(tc.KNOWN_PACKAGES) if apt else {}, "capabilities": capabilities,
        "gpu_error": gpu_error, "cuda_home": cuda_home, "nvcc_version": nvcc_version, "nvcc_archs": nvcc_archs,
        "mpi_home": _mpi_home(), "nccl": [_nccl_install(lib) for lib in _nccl_libraries()], "builds": _builds(),
        "cores": os.cpu_count() or 1, "uid": os.getuid(),
    }  # fmt: skip


# ---------------------------------------------------------------------------------------------------- packages


def install_packages(packages: Sequence[str]) -> int:
    """apt-get install, waiting for dpkg's lock; `apt-get update` first only when the lists do not know a package."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    lock = ["-o", f"DPkg::Lock::Timeout={APT_LOCK_WAIT_S}"]
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", *lock, *packages]
    code, out = _run(install, timeout_s=3600, env=env)
    if code != 0 and re.search(r"Unable to locate package|has no installation candidate|404\s+Not Found", out):
        print("apt-get update: the package lists do not have them", flush=True)
        code, out = _run(["apt-get", "update", "-q", *lock], timeout_s=1800, env=env)
        if code == 0:
            code, out = _run(install, timeout_s=3600, env=env)
    tail = [line for line in out.splitlines() if line.strip()][-12:]
    print("\n".join(tail), flush=True)
    return code


# ----------------------------------------------------------------------------------------------------- sources


def source_name(project: str, release: str) -> str:
    """The tarball's name, as GitHub names a tag's archive (and as `--from DIR` must hold it)."""
    return f"{project}-{release}.tar.gz"


def receive(name: str, stream: IO[str]) -> int:
    """A tarball sent by the controller (base64 on stdin), kept in the node's sources directory."""
    if not re.fullmatch(r"[A-Za-z0-9._-]+\.tar\.gz", name):
        print(f"not a source tarball name: {name!r}", file=sys.stderr)
        return 2
    sources = root() / "sources"
    sources.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=sources, delete=False, prefix=".receiving-") as handle:
        handle.write(base64.b64decode(stream.read(), validate=False))
    os.replace(handle.name, sources / name)
    print(f"received {name} ({(sources / name).stat().st_size} bytes)", flush=True)
    return 0


def _source(project: str, release: str) -> Path:
    path = root() / "sources" / source_name(project, release)
    if path.exists():
        return path
    url = tc.SOURCE_URLS[project].format(release=release)
    print(progress_line(project, 0, f"downloading {url}"), flush=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with (
            urllib.request.urlopen(url, timeout=60) as response,  # noqa: S310 (SOURCE_URLS: fixed https)
            tempfile.NamedTemporaryFile(dir=path.parent, delete=False, prefix=".downloading-") as handle,
        ):
            shutil.copyfileobj(response, handle)
    except OSError as exc:
        raise BuildError(f"cannot download {url} ({exc}): give the sources with `wirespeed setup --from DIR`") from None
    os.replace(handle.name, path)
    return path


def _extract(tarball: Path, into: Path) -> None:
    """The archive's one top directory becomes `into`; nothing outside it, no links out of it, no devices (NCCL's
    own tarball has a link inside it: pkg/debian/copyright -> ../../LICENSE.txt)."""
    with tarfile.open(tarball) as archive:
        members = archive.getmembers()
        for member in members:
            parts = Path(member.name).parts[1:]
            if member.name.startswith("/") or ".." in parts or member.isdev():
                raise BuildError(f"{tarball}: unsafe member {member.name!r}")
            member.name = str(Path(*parts)) if parts else "."
            if member.issym():
                target = os.path.normpath(os.path.join(os.path.dirname(member.name), member.linkname))
                outside = member.linkname.startswith("/") or target == ".." or target.startswith("../")
            elif member.islnk():
                link_parts = Path(member.linkname).parts[1:]
                member.linkname = str(Path(*link_parts)) if link_parts else "."
                outside = member.linkname.startswith("/") or ".." in link_parts
            else:
                outside = False
            if outside:
                raise BuildError(f"{tarball}: link {member.name!r} points outside the tree")
        archive.extractall(into, members=[m for m in members if m.name != "."])  # noqa: S202 (checked above)


# ------------------------------------------------------------------------------------------------------- builds


class BuildError(Exception):
    pass


def progress_line(step: str, count: int, what: str) -> str:
    return tc.progress_line(step, count, what)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _make(step: str, tree: Path, args: Sequence[str]) -> None:
    """make in `tree`, its output in tree/build.log; every two seconds, how many files it has compiled."""
    log_path = tree / "build.log"
    count, last, started = 0, "starting", time.monotonic()
    done = threading.Event()

    def tick() -> None:
        while not done.wait(EVERY_S):
            print(progress_line(step, count, f"{last} ({time.monotonic() - started:.0f} s)"), flush=True)

    ticker = threading.Thread(target=tick, daemon=True)
    with open(log_path, "w") as log:
        making = process.spawn(["make", *args], alongside=True, cwd=tree)
        ticker.start()
        try:
            assert making.stdout is not None
            for line in making.stdout:
                log.write(line)
                if line.startswith("Compiling"):
                    count += 1
                    last = line.split()[1] if len(line.split()) > 1 else last
            code = making.wait()
        finally:
            done.set()
            if making.poll() is None:  # stopped (Ctrl-C, a signal): make and its compilers with it
                process.kill_group(making)
    if code != 0:
        raise BuildError(f"make failed (exit {code}) after {count} files; log: {log_path}")


def build_nccl(release: str, arch: str, cuda_home: str, cores: int) -> dict[str, Any]:
    """NCCL `release` for `arch` only, into ~/.local/share/wirespeed/nccl/<release>-<arch>/build."""
    tree = Path(tc.nccl_tree(str(root()), release, arch))
    with _locked(tree.with_suffix(".lock")):
        manifest = tree / tc.MANIFEST
        if manifest.exists():
            return dict(json.loads(manifest.read_text()))
        shutil.rmtree(tree, ignore_errors=True)
        tree.mkdir(parents=True)
        _extract(_source("nccl", release), tree)
        _make("nccl", tree, [f"-j{cores}", "src.build", f"CUDA_HOME={cuda_home}", f"NVCC_GENCODE={tc.gencode(arch)}"])
        library = tree / "build" / "lib" / "libnccl.so.2"
        if not library.exists():
            raise BuildError(f"make ended but {library} is missing; log: {tree / 'build.log'}")
        built = {"release": release, "version": tc.version_of(release), "arch": arch, "home": str(tree / "build"),
                 "library": str(library)}  # fmt: skip
        manifest.write_text(json.dumps(built, indent=1) + "\n")
        return built


def build_nccl_tests(
    release: str, arch: str, key: str, nccl_home: str, nccl_library: str, nccl_version: str, cores: int
) -> dict[str, Any]:
    """nccl-tests `release` with MPI=1 against the NCCL named, into ~/.local/share/wirespeed/nccl-tests/<key>."""
    cuda_home, _, _ = find_cuda()
    mpi_home = _mpi_home()
    if cuda_home is None or mpi_home is None:
        raise BuildError("no nvcc" if cuda_home is None else "no OpenMPI headers (mpicc --showme:incdirs)")
    tree = root() / "nccl-tests" / key
    with _locked(tree.with_suffix(".lock")):
        manifest_path = tree / tc.MANIFEST
        shutil.rmtree(tree, ignore_errors=True)
        tree.mkdir(parents=True)
        _extract(_source("nccl-tests", release), tree)
        _make("nccl-tests", tree, [f"-j{cores}", "MPI=1", f"MPI_HOME={mpi_home}", f"NCCL_HOME={nccl_home}",
                                   f"CUDA_HOME={cuda_home}", f"NVCC_GENCODE={tc.gencode(arch)}"])  # fmt: skip
        cuda_lib = os.path.join(cuda_home, "lib64")
        manifest = {
            "nccl_tests": release, "nccl_version": nccl_version, "arch": arch, "nccl_home": nccl_home,
            "nccl_library": nccl_library, "mpi_home": mpi_home, "cuda_home": cuda_home,
            "library_path": [str(Path(nccl_library).parent)] + ([cuda_lib] if os.path.isdir(cuda_lib) else []),
        }  # fmt: skip
        why = check_tree(tree, manifest)
        if why is not None:
            raise BuildError(f"built, but it does not load: {why}; log: {tree / 'build.log'}")
        manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    select(key)
    return manifest


def select(key: str) -> str | None:
    """Point `current` at a verified tree (atomically); why not, when it does not load."""
    tree = root() / "nccl-tests" / key
    try:
        manifest = json.loads((tree / tc.MANIFEST).read_text())
    except (OSError, ValueError) as exc:
        return f"{tree}: no readable {tc.MANIFEST} ({exc})"
    why = check_tree(tree, manifest)
    if why is not None:
        return why
    link = tree.parent / tc.CURRENT
    temporary = tree.parent / f".{tc.CURRENT}-{os.getpid()}"
    with contextlib.suppress(FileNotFoundError):
        temporary.unlink()
    temporary.symlink_to(key)
    os.replace(temporary, link)
    return None

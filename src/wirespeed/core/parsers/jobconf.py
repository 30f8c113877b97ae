"""Configuration files that set variables for every job on a node: NCCL's and OpenMPI's, parsed as they read them.

NCCL (src/misc/param.cc, initEnv): `$NCCL_CONF_FILE` if set, else `~/.nccl.conf` (the home of the user's passwd
entry), then `/etc/nccl.conf`. Each line `NAME=VALUE` is passed to setenv(NAME, VALUE, 0): a variable already set
wins, so the environment beats the user's file, which beats /etc. A line starting with `#` is skipped, as is one
with no `=`; nothing is trimmed (`NCCL_IB_HCA = x` sets a variable named "NCCL_IB_HCA ").
OpenMPI (mca_base_parse_paramfile): `name = value` lines, `#` comments, blanks around both sides ignored; the
user's `~/.openmpi/mca-params.conf` over the system's `$prefix/etc/openmpi-mca-params.conf`; `OMPI_MCA_name` in
the environment over both.
"""

from __future__ import annotations

from dataclasses import dataclass

ETC_NCCL_CONF = "/etc/nccl.conf"
USER_NCCL_CONF = ".nccl.conf"  # in the user's home
ETC_OPENMPI_CONF = "/etc/openmpi/openmpi-mca-params.conf"  # Debian and Ubuntu's Open MPI
USER_OPENMPI_CONF = ".openmpi/mca-params.conf"  # in the user's home


@dataclass(frozen=True)
class Setting:
    name: str
    value: str
    path: str
    line: int  # 1-based

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def nccl_conf(text: str, path: str) -> list[Setting]:
    """NAME=VALUE lines as NCCL's setEnvFile reads them, in file order."""
    settings = []
    for number, raw in enumerate(text.split("\n"), start=1):
        if not raw or raw.startswith("#") or "=" not in raw:
            continue
        name, _, value = raw.partition("=")
        settings.append(Setting(name, value, path, number))
    return settings


def mca_params(text: str, path: str) -> list[Setting]:
    """`name = value` lines of an OpenMPI parameter file, in file order."""
    settings = []
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, _, value = line.partition("=")
        settings.append(Setting(name.strip(), value.strip(), path, number))
    return settings


def nccl_files(home: str | None, environment: dict[str, str]) -> list[str]:
    """The files NCCL reads, the one that wins first: $NCCL_CONF_FILE or ~/.nccl.conf, then /etc/nccl.conf."""
    user = environment.get("NCCL_CONF_FILE", "")
    first = [user] if user else ([f"{home.rstrip('/')}/{USER_NCCL_CONF}"] if home else [])
    return [*first, ETC_NCCL_CONF]


def openmpi_files(home: str | None) -> list[str]:
    """OpenMPI's parameter files, the one that wins first."""
    return [*([f"{home.rstrip('/')}/{USER_OPENMPI_CONF}"] if home else []), ETC_OPENMPI_CONF]


def merged(environment: dict[str, str], layers: list[list[Setting]], env_prefix: str = "") -> dict[str, Setting]:
    """Every variable the files set and the environment does not: the first file (and within a file the first
    line, as setenv without overwrite keeps it) wins. `env_prefix` maps a file name to its environment name
    (`OMPI_MCA_` for OpenMPI)."""
    found: dict[str, Setting] = {}
    for settings in layers:
        for setting in settings:
            if env_prefix + setting.name not in environment and setting.name not in found:
                found[setting.name] = setting
    return found


def meminfo_kb(text: str, key: str) -> int | None:
    """A `/proc/meminfo` value in kB (`CmaTotal:       0 kB` -> 0); None when the key is absent."""
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        if name.strip() == key:
            fields = rest.split()
            if not fields or not fields[0].isdigit():
                raise ValueError(f"{key}: {rest.strip()!r} is not a number of kB")
            return int(fields[0])
    return None

"""Small helpers shared by the tests."""
from __future__ import annotations

import json
from pathlib import Path

CAP_NAMES = [
    "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL",
    "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE",
    "CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK", "CAP_IPC_OWNER",
    "CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE", "CAP_SYS_PACCT",
    "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE", "CAP_SYS_RESOURCE", "CAP_SYS_TIME",
    "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE", "CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL",
    "CAP_SETFCAP", "CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG", "CAP_WAKE_ALARM",
    "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF", "CAP_CHECKPOINT_RESTORE",
]


def cap_mask(names) -> int:
    m = 0
    for n in names:
        m |= 1 << CAP_NAMES.index(n)
    return m


def cap_names(mask: int | str) -> list[str]:
    if isinstance(mask, str):
        mask = int(mask, 16)
    return [n for i, n in enumerate(CAP_NAMES) if mask & (1 << i)]


def last_cap() -> int:
    return int(Path("/proc/sys/kernel/cap_last_cap").read_text())


def parse_mountinfo(lines) -> list[dict]:
    """Parse /proc/self/mountinfo lines into dicts with mount_point,
    mount_options (set), optional (list), fstype, source, super_options (set)."""
    res = []
    for line in lines:
        if not line.strip():
            continue
        left, right = line.split(" - ", 1)
        lf = left.split()
        rf = right.split()
        res.append({
            "id": int(lf[0]),
            "parent": int(lf[1]),
            "dev": lf[2],
            "root": lf[3].replace("\\040", " "),
            "mount_point": lf[4].replace("\\040", " "),
            "mount_options": set(lf[5].split(",")),
            "optional": lf[6:],
            "fstype": rf[0],
            "source": rf[1] if len(rf) > 1 else "",
            "super_options": set(rf[2].split(",")) if len(rf) > 2 else set(),
        })
    return res


def find_mount(mounts: list[dict], mount_point: str) -> dict:
    """Last (topmost) mount at mount_point."""
    hits = [m for m in mounts if m["mount_point"] == mount_point]
    assert hits, f"{mount_point} not mounted; mounts: {[m['mount_point'] for m in mounts]}"
    return hits[-1]


def read_json_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]

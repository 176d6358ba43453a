#!/usr/bin/python3
"""Which parts of a running program's binary it touched: the pages of its file mappings that are
present (/proc/PID/pagemap, read as root with the kernel's fault-around off, so present means
touched), attributed to the symbols and sections on them, summed by Swift module.

  touched.py PID SYMBOLS_BINARY

SYMBOLS_BINARY is the unstripped build of the binary PID runs (stripping keeps the addresses).
Prints KiB touched by module (Swift symbols by their mangled module name; C++ by namespace;
what no symbol covers by section), largest first."""
import collections
import os
import re
import struct
import subprocess
import sys

PAGE = os.sysconf("SC_PAGE_SIZE")


def mappings(pid):
    """The executable's own mappings: (start, end, file offset)."""
    exe = os.readlink("/proc/%d/exe" % pid)
    found = []
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 6 and fields[5] == exe:
                start, end = (int(x, 16) for x in fields[0].split("-"))
                found.append((start, end, int(fields[2], 16)))
    return found


def present_pages(pid, ranges):
    """The file offsets of the pages of `ranges` that are in memory for `pid`."""
    offsets = set()
    with open("/proc/%d/pagemap" % pid, "rb") as f:
        for start, end, offset in ranges:
            f.seek(start // PAGE * 8)
            data = f.read((end - start) // PAGE * 8)
            for index in range(len(data) // 8):
                (entry,) = struct.unpack_from("<Q", data, index * 8)
                if entry >> 63:
                    offsets.add(offset + index * PAGE)
    return offsets


def segments(binary):
    """LOAD segments: (file offset, virtual address, file size)."""
    out = subprocess.run(["readelf", "-lW", binary], capture_output=True, text=True, check=True).stdout
    return [(int(m.group(1), 16), int(m.group(2), 16), int(m.group(3), 16))
            for m in re.finditer(r"^\s*LOAD\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+0x[0-9a-f]+\s+(0x[0-9a-f]+)", out, re.M)]


def sections(binary):
    out = subprocess.run(["readelf", "-SW", binary], capture_output=True, text=True, check=True).stdout
    found = []
    for m in re.finditer(r"\]\s+(\S+)\s+\S+\s+([0-9a-f]{16})\s+[0-9a-f]+\s+([0-9a-f]+)", out):
        address, size = int(m.group(2), 16), int(m.group(3), 16)
        if address and size:
            found.append((address, size, m.group(1)))
    return found


def module(symbol):
    """Who a symbol belongs to: a Swift module, a C++ namespace, or C."""
    m = re.match(r"\$s(\d+)", symbol)
    if m:
        length = int(m.group(1))
        return symbol[len(m.group(0)):len(m.group(0)) + length]
    if symbol.startswith("$s"):
        return "Swift (standard library)" if symbol[2:3] in "SsyBe" else "Swift (other)"
    if symbol.startswith("_ZN4toml"):
        return "toml++ (TOMLKit)"
    if symbol.startswith("_ZN5swift") or symbol.startswith("swift_") or symbol.startswith("_swift"):
        return "Swift runtime"
    if symbol.startswith("_Z"):
        return "C++ (other)"
    return "C"


def main():
    pid, binary = int(sys.argv[1]), sys.argv[2]
    loaded = mappings(pid)
    base = min(start - offset for start, _, offset in loaded)
    touched_offsets = present_pages(pid, loaded)
    # Virtual addresses (as in the ELF file) of the touched pages.
    touched = set()
    for file_offset, vaddr, size in segments(binary):
        for page in touched_offsets:
            if file_offset <= page < file_offset + size:
                touched.add((vaddr + page - file_offset) // PAGE)
    nm = subprocess.run(["nm", "-S", "--defined-only", binary], capture_output=True, text=True, check=True).stdout
    by_module = collections.Counter()
    covered = collections.Counter()
    for line in nm.splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        address, size = int(fields[0], 16), int(fields[1], 16)
        if size == 0:
            continue
        name = fields[3]
        first, last = address // PAGE, (address + size - 1) // PAGE
        for page in range(first, last + 1):
            if page in touched:
                lo, hi = max(address, page * PAGE), min(address + size, (page + 1) * PAGE)
                by_module[module(name)] += hi - lo
                covered[page] += hi - lo
    # What symbols do not cover: by section.
    for address, size, name in sections(binary):
        first, last = address // PAGE, (address + size - 1) // PAGE
        for page in range(first, last + 1):
            if page in touched:
                lo, hi = max(address, page * PAGE), min(address + size, (page + 1) * PAGE)
                share = (hi - lo) * max(0, PAGE - covered[page]) / PAGE
                if share:
                    by_module["[" + name + ", no symbol]"] += share
    total = len(touched) * PAGE
    print("%s touched %d KiB of its binary (%d pages; load base 0x%x):" % (os.path.basename(binary), total // 1024, len(touched), base))
    for name, size in by_module.most_common(25):
        print("  %-40s %7d KiB" % (name, size // 1024))


if __name__ == "__main__":
    main()

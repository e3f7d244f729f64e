#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Which cached pages of a file or block device are dirty, for a test's
failure dump: dirtypages.py PATH... prints, per path, how many of its
page-cache pages are dirty or under writeback and the first of their
indexes. Root only: it maps the file, asks mincore() which pages are
cached (only those are touched, so nothing is read in), finds each one's
frame in /proc/self/pagemap and reads the frame's flags in
/proc/kpageflags (DIRTY bit 4, WRITEBACK bit 8:
Documentation/admin-guide/mm/pagemap.rst)."""

import ctypes
import os
import struct
import sys

PAGE = os.sysconf("SC_PAGE_SIZE")
CHUNK = 16384 * PAGE
KPF_DIRTY, KPF_WRITEBACK = 4, 8
PROT_READ, MAP_SHARED = 1, 1
MAP_FAILED = ctypes.c_void_p(-1).value

LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.mmap.restype = ctypes.c_void_p
LIBC.mmap.argtypes = [
    ctypes.c_void_p,
    ctypes.c_size_t,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_long,
]
LIBC.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
LIBC.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]


def frame_flags(pagemap, kflags, addr):
    """The flags of the frame mapped at @addr, or None if none is."""
    pagemap.seek(addr // PAGE * 8)
    (entry,) = struct.unpack("<Q", pagemap.read(8))
    if not entry >> 63:
        return None
    kflags.seek((entry & ((1 << 55) - 1)) * 8)
    return struct.unpack("<Q", kflags.read(8))[0]


def scan_chunk(fd, off, length, pagemap, kflags, dirty, wb):
    """Add the dirty and writeback page indexes of [off, off + length)."""
    addr = LIBC.mmap(None, length, PROT_READ, MAP_SHARED, fd, off)
    if addr in (None, MAP_FAILED):
        raise OSError(ctypes.get_errno(), "mmap")
    try:
        pages = (length + PAGE - 1) // PAGE
        vec = ctypes.create_string_buffer(pages)
        if LIBC.mincore(addr, length, vec) != 0:
            raise OSError(ctypes.get_errno(), "mincore")
        cached = vec.raw
        for i in range(pages):
            if not cached[i] & 1:
                continue
            ctypes.string_at(addr + i * PAGE, 1)  # map it: cached, no read
            flags = frame_flags(pagemap, kflags, addr + i * PAGE)
            if flags is None:
                continue
            if flags >> KPF_DIRTY & 1:
                dirty.append(off // PAGE + i)
            if flags >> KPF_WRITEBACK & 1:
                wb.append(off // PAGE + i)
    finally:
        LIBC.munmap(addr, length)


def scan(path, pagemap, kflags):
    """(dirty page indexes, writeback page indexes) of @path's cache."""
    dirty, wb = [], []
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.lseek(fd, 0, os.SEEK_END)
        for off in range(0, size, CHUNK):
            length = min(CHUNK, size - off)
            scan_chunk(fd, off, length, pagemap, kflags, dirty, wb)
    finally:
        os.close(fd)
    return dirty, wb


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: dirtypages.py PATH...: name the files or devices")
    with open("/proc/self/pagemap", "rb") as pagemap:
        with open("/proc/kpageflags", "rb") as kflags:
            for path in sys.argv[1:]:
                dirty, wb = scan(path, pagemap, kflags)
                print(
                    f"{path}: {len(dirty)} dirty, {len(wb)} under writeback;"
                    f" dirty at {dirty[:16]}"
                )


if __name__ == "__main__":
    main()

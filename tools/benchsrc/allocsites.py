#!/usr/bin/env python3
"""Allocation sites from alloccount.so's sampled stacks (tools/benchsrc/alloccount.c).

    allocsites.py STACKS [ALLOCS_PER_DELIVERY] > table.md

Each line of STACKS is one sampled allocation: `bytes;frame;frame;…` (frame = `module+0xoffset` or `=symbol`).
Frames are resolved with addr2line (function, file:line) and demangled with `swift demangle` when it is there.
A sample's *site* is its first frame in LiveBus's own sources (a path with `Sources/LiveBus`), else its first
frame outside the allocator and the Swift runtime. Prints the sites by share of the samples, with the estimated
allocations per delivery (share × ALLOCS_PER_DELIVERY) when given.
"""
import collections
import shutil
import subprocess
import sys

RUNTIME = ("swift_slowAlloc", "swift_allocObject", "swift_allocBox", "swift_arrayInit", "swift_allocEmptyBox",
           "malloc", "calloc", "realloc", "posix_memalign", "aligned_alloc", "alloccount", "_allocateUninitialized",
           "swift_retain", "__libc_", "operator new")


# Paths a sampled stack is filed under, first match wins (frame function names, demangled).
PATHS = [
    ("fan-out (per delivered EVENT: Daemon.fanOut, deliver, write)",
     ("Daemon.fanOut", "Daemon.deliver(", "Daemon.write(_:to:", "Daemon.offer(")),
    ("per PUBLISH (decode, group commit, store, ACK)",
     ("Daemon.publishFromClient", "Daemon.commitTurn", "Daemon.batchCommitted", "SQLiteStore")),
    ("per session and time (probes, keepalives, UPTODATE announcements, timers)",
     ("Daemon.probeAnswered", "Daemon.sendProbe", "Daemon.armProbe", "Daemon.startAnnouncing", "Daemon.sweep",
      "LoopTimer")),
]


def resolve(frames):
    """{frame: (function, file:line)} for every frame."""
    out = {}
    by_module = collections.defaultdict(list)
    for f in frames:
        if f.startswith("="):
            out[f] = (f[1:], "")
        elif "+0x" in f:
            mod, off = f.rsplit("+0x", 1)
            by_module[mod].append((f, off))
        else:
            out[f] = ("?", "")
    a2l = shutil.which("addr2line")
    for mod, items in by_module.items():
        names = [("?", "")] * len(items)
        if a2l:
            try:
                r = subprocess.run([a2l, "-f", "-e", mod] + ["0x" + o for _, o in items], capture_output=True,
                                   text=True, timeout=120)
                lines = r.stdout.splitlines()
                if len(lines) >= 2 * len(items):
                    names = [(lines[2 * i], lines[2 * i + 1]) for i in range(len(items))]
            except (OSError, subprocess.SubprocessError):
                pass
        short = mod.rsplit("/", 1)[-1]
        for (f, off), (fn, loc) in zip(items, names):
            out[f] = (fn if fn != "??" else f"{short}+0x{off}", "" if loc.startswith("??") else loc)
    sw = shutil.which("swift")
    if sw:
        keys = list(out)
        try:
            r = subprocess.run([sw, "demangle", "--simplified"], input="\n".join(out[k][0] for k in keys),
                               capture_output=True, text=True, timeout=120)
            dem = r.stdout.splitlines()
            if len(dem) == len(keys):
                for k, d in zip(keys, dem):
                    out[k] = (d, out[k][1])
        except (OSError, subprocess.SubprocessError):
            pass
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    per_delivery = float(sys.argv[2]) if len(sys.argv) > 2 else None
    samples = []
    with open(sys.argv[1]) as f:
        for line in f:
            parts = line.rstrip("\n").split(";")
            if len(parts) >= 2:
                samples.append(parts[1:])
    if not samples:
        print("No allocation was sampled in the measured window.")
        return
    names = resolve({fr for s in samples for fr in s})
    sites = collections.Counter()
    via = collections.defaultdict(collections.Counter)
    for s in samples:
        resolved = [names[fr] for fr in s]
        site = next((r for r in resolved if "Sources/LiveBus" in r[1]), None)
        if site is None:
            site = next((r for r in resolved if not any(k in r[0] for k in RUNTIME)), resolved[0])
        first = next((r[0] for r in resolved if not any(k in r[0] for k in RUNTIME)), "?")
        loc = site[1].split("Sources/", 1)[-1] if site[1] else ""
        key = (site[0][:110], loc)
        sites[key] += 1
        if first != site[0]:
            via[key][first[:80]] += 1
    total = len(samples)
    print(f"{total} sampled allocations of the measured window. Site = the first frame in LiveBus's sources.")
    print("")
    # By path: what is proportional to deliveries (the fan-out of a committed event to its subscribers) apart from
    # what is proportional to PUBLISHes (decode, store, ACK) and to sessions and time (clock probes, keepalives,
    # the once-a-second UPTODATE announcements), which the marginal N = 100 − N = 10 estimate mixes in whenever
    # the PUBLISH rate is low (a loaded machine).
    paths = collections.Counter()
    for s in samples:
        fns = " ".join(names[fr][0] for fr in s)
        path = next((p for p, keys in PATHS if any(k in fns for k in keys)), "other")
        paths[path] += 1
    print("| path | share of the samples |" + (" allocations per delivery |" if per_delivery is not None else ""))
    print("|---|---:|" + ("---:|" if per_delivery is not None else ""))
    for p, _ in PATHS + [("other", ())]:
        n = paths[p]
        est = f" {n / total * per_delivery:.3f} |" if per_delivery is not None else ""
        print(f"| {p} | {100 * n / total:.1f} % |{est}")
    print("")
    hdr = "| share | " + ("allocations per delivery | " if per_delivery is not None else "") + "site | allocated in |"
    print(hdr)
    print("|---:|" + ("---:|" if per_delivery is not None else "") + "---|---|")
    for (fn, loc), n in sites.most_common(25):
        share = n / total
        inner = ", ".join(f"{k} ({c})" for k, c in via[(fn, loc)].most_common(2))
        est = f"{share * per_delivery:.2f} | " if per_delivery is not None else ""
        where = f"`{fn}`" + (f" ({loc})" if loc else "")
        where, inner = where.replace("|", "\\|"), inner.replace("|", "\\|") or "–"
        print(f"| {100 * share:.1f} % | {est}{where} | {inner} |")


if __name__ == "__main__":
    main()

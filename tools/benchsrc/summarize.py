#!/usr/bin/env python3
"""Turns tools/bench's raw key=value lines into the Markdown tables of BENCHMARKS.md.

    summarize.py RAW MACHINE OUTDIR       -> Markdown on stdout (profiles read from OUTDIR)
    summarize.py --splice BENCHMARKS.md RESULTS.md
                                          -> replaces the text between the bench:results markers
"""
import statistics
import sys

BEGIN = "<!-- bench:results:begin -->"
END = "<!-- bench:results:end -->"
FAN_PEERS = ["livebusd", "redis", "mosquitto", "nats", "raw-socket", "raw-1write", "livebusd-fed", "livebusd-fed3"]
# livebusd --federate (issue 19): one JetStream node (replicas 1), the 3-node cluster (replicas 3)
FED_PEERS = {"livebusd-fed": "1 JetStream node, replicas 1", "livebusd-fed3": "3-node JetStream cluster, replicas 3"}
PEERS_ONLY = ["redis", "mosquitto", "nats"]


def parse(path):
    rows = []
    with open(path) as f:
        for line in f:
            d = {}
            for tok in line.split():
                if "=" in tok:
                    k, v = tok.split("=", 1)
                    d[k] = v
            if d:
                rows.append(d)
    return rows


def num(d, k):
    try:
        return float(d[k])
    except (KeyError, ValueError):
        return None


def pos(x):
    """A measurement the harness reports as -1 when its window saw nothing (no delivery): not a value."""
    return x if x is not None and x >= 0 else None


def stats(values):
    v = [x for x in values if x is not None]
    if not v:
        return None
    return statistics.median(v), min(v), max(v), len(v)


def fmt_rate(x):
    if x is None:
        return "–"
    if x >= 1e6:
        return f"{x / 1e6:.2f} M"
    if x >= 1e3:
        return f"{x / 1e3:.1f} k"
    return f"{x:.0f}"


def fmt_us(x):
    if x is None or x < 0:
        return "–"
    if x >= 1000:
        return f"{x / 1000:.1f} ms"
    return f"{x:.0f} µs"


def cell(s, f):
    if s is None:
        return "–"
    med, lo, hi, n = s
    if n == 1:
        return f(med)
    return f"{f(med)} ({f(lo)}–{f(hi)})"


def select(rows, **kw):
    return [r for r in rows if all(r.get(k) == v for k, v in kw.items())]


def main(raw, machine, profile):
    rows = parse(raw)
    out = []
    with open(machine) as f:
        for line in f:
            out.append(f"- {line.strip()}")
    runs = sorted({r.get("run") for r in rows if r.get("mode") == "throughput"}, key=int)
    out.append("")
    out.append(
        f"Medians over {len(runs)} run(s); (min–max) when more than one. Message: a {rows[0].get('bytes', '?') if rows else '?'}-byte "
        "order content state (PROTOCOL.md §5.1 publish body), 1 publisher, 10 topics, N subscriber connections "
        "read by one epoll loop."
    )
    failed = [r for r in rows if r.get("mode") == "failed"]
    if failed:
        out.append("")
        out.append(f"**{len(failed)} measurement(s) failed**: " + "; ".join(
            f"{r.get('peer')} {r.get('args', '')}".strip() for r in failed))

    odd = [r for r in rows if r.get("mode") in ("throughput", "latency")
           and (num(r, "stalls") or num(r, "resent") or abs(num(r, "loss") or 0) > 1e-9)]
    if odd:
        out.append("")
        out.append("Irregular measurements (deliveries still missing 2 s after publishing stopped, closed-loop stalls, or livebusd EVENTs re-sent "
                   "with re-converted instants, which are not counted as deliveries):")
        for r in odd:
            out.append(f"- {r.get('peer')} {r.get('mode')} N={r.get('subs')} run {r.get('run')}: "
                       f"loss {r.get('loss')}, stalls {r.get('stalls')}, re-sent {r.get('resent', '0')}")

    fan = [r for r in rows if r.get("mode") == "throughput" and r.get("run", "").isdigit()]
    lat = [r for r in rows if r.get("mode") == "latency" and r.get("run", "").isdigit()]
    subs = sorted({int(r["subs"]) for r in fan + lat})
    peers = [p for p in FAN_PEERS if any(r["peer"] == p for r in fan)]

    thr = {}
    out.append("")
    out.append("### 1. Fan-out: delivered messages per second (closed loop, no loss)")
    out.append("")
    out.append("| N | " + " | ".join(peers) + " |")
    out.append("|---:|" + "---:|" * len(peers))
    for n in subs:
        cells = []
        for p in peers:
            s = stats([num(r, "delivered_per_s") for r in select(fan, peer=p, subs=str(n))])
            thr[(p, n)] = s
            cells.append(cell(s, fmt_rate))
        out.append(f"| {n} | " + " | ".join(cells) + " |")
    out.append("")
    out.append("Ratios of livebusd's median to each (above 1 = livebusd faster):")
    out.append("")
    others = [p for p in peers if p != "livebusd" and p not in FED_PEERS]
    out.append("| N | " + " | ".join(f"vs {p}" for p in others) + " |")
    out.append("|---:|" + "---:|" * len(others))
    for n in subs:
        lb = thr.get(("livebusd", n))
        cells = []
        for p in others:
            o = thr.get((p, n))
            cells.append(f"{lb[0] / o[0]:.3f}×" if lb and o and o[0] else "–")
        out.append(f"| {n} | " + " | ".join(cells) + " |")

    out.append("")
    out.append("### 2. Publish-to-receive latency at a fixed offered load (open loop)")
    out.append("")
    out.append(
        "Offered load 10,000 msg/s (above 1 M deliveries/s, 1,000,000 / N msg/s). p50 / p99 / p99.9 over "
        "every delivery in the measured window; *delivered* is the share of offered deliveries that arrived "
        "during the window: below 100 % the peer could not keep up and the latency is queueing, not transit."
    )
    out.append("")
    out.append("| N | peer | offered msg/s | delivered | p50 | p99 | p99.9 |")
    out.append("|---:|---|---:|---:|---:|---:|---:|")
    latp99 = {}
    for n in subs:
        for p in peers:
            rs = select(lat, peer=p, subs=str(n))
            if not rs:
                continue
            rate = num(rs[0], "rate") or 0
            share = stats([(num(r, "delivered_per_s") or 0) / (rate * n) for r in rs if rate])
            p50 = stats([num(r, "p50_us") for r in rs])
            p99 = stats([num(r, "p99_us") for r in rs])
            p999 = stats([num(r, "p999_us") for r in rs])
            latp99[(p, n)] = (p99, share)
            out.append(
                f"| {n} | {p} | {rate:,.0f} | {cell(share, lambda x: f'{100 * min(x, 1):.0f} %')} | "
                f"{cell(p50, fmt_us)} | {cell(p99, fmt_us)} | {cell(p999, fmt_us)} |"
            )

    fed = [p for p in FED_PEERS if any(r["peer"] == p for r in fan + lat)]
    if fed:
        out.append("")
        out.append("### 2b. Federation through NATS JetStream: what it costs")
        out.append("")
        out.append(
            "`livebusd --federate` (PROTOCOL.md §5.8) in the same run, with the same workloads as above: each PUBLISH "
            "is a JetStream publish (pipelined, chained by the expected last subject sequence and message id), "
            "acknowledged once the stream stored it, "
            "and reaches subscribers when the daemon's ordered consumer brings it back; SQLite is not used. "
            + "; ".join(f"*{p}*: {FED_PEERS[p]}" for p in fed)
            + ". The ratios divide the federated median by livebusd alone (SQLite, same run) and by NATS core "
            "alone (pub/sub: nothing stored, nothing acknowledged). Fan-out below 1× and latency above 1× are the "
            "federation's cost."
        )
        out.append("")
        out.append("| N | peer | fan-out msg/s | / livebusd alone | / NATS core |")
        out.append("|---:|---|---:|---:|---:|")
        for n in subs:
            for p in fed:
                f_ = thr.get((p, n))
                if not f_:
                    continue
                lb, nt = thr.get(("livebusd", n)), thr.get(("nats", n))
                out.append(
                    f"| {n} | {p} | {cell(f_, fmt_rate)} | "
                    + (f"{f_[0] / lb[0]:.3f}×" if lb and lb[0] else "–") + " | "
                    + (f"{f_[0] / nt[0]:.3f}×" if nt and nt[0] else "–") + " |"
                )
        out.append("")
        out.append(
            "Latency at the offered load of section 2 (p50 / p99; the ratios are of the federated value to the "
            "other's: above 1× = slower). A ratio marked † has a side that delivered below 99.5 % of the offered "
            "load: its latency is queueing, not transit, and the delivered share is the cost to read:"
        )
        out.append("")
        out.append("| N | peer | delivered | p50 | p99 | p50 / livebusd alone | p99 / livebusd alone | p50 / NATS core | p99 / NATS core |")
        out.append("|---:|---|---:|---:|---:|---:|---:|---:|---:|")

        def lat_med(p, n, key):
            s_ = stats([num(r, key) for r in select(lat, peer=p, subs=str(n))])
            return s_[0] if s_ and s_[0] is not None and s_[0] > 0 else None

        def share(p, n):
            v = latp99.get((p, n))
            return v[1][0] if v and v[1] else None

        def ratio(a, b, p, n, other):
            if a is None or not b:
                return "–"
            sa, sb = share(p, n), share(other, n)
            mark = "" if sa is not None and sb is not None and sa >= 0.995 and sb >= 0.995 else " †"
            return f"{a / b:.2f}×{mark}"

        for n in subs:
            for p in fed:
                if (p, n) not in latp99:
                    continue
                sh = latp99[(p, n)][1]
                f50, f99 = lat_med(p, n, "p50_us"), lat_med(p, n, "p99_us")
                out.append(
                    f"| {n} | {p} | {cell(sh, lambda x: f'{100 * min(x, 1):.0f} %')} | {fmt_us(f50)} | {fmt_us(f99)} | "
                    f"{ratio(f50, lat_med('livebusd', n, 'p50_us'), p, n, 'livebusd')} | "
                    f"{ratio(f99, lat_med('livebusd', n, 'p99_us'), p, n, 'livebusd')} | "
                    f"{ratio(f50, lat_med('nats', n, 'p50_us'), p, n, 'nats')} | "
                    f"{ratio(f99, lat_med('nats', n, 'p99_us'), p, n, 'nats')} |"
                )

    ses = [r for r in rows if r.get("mode") == "sessions"]
    sess = {}
    if ses:
        out.append("")
        out.append("### 3. Many idle sessions")
        out.append("")
        cnt = ses[0].get("count")
        out.append(
            f"{cnt} connections opened one after another, each completing its handshake and one subscription; "
            "then 2 s idle (keepalives and clock probes answered). RSS = the server's VmRSS."
        )
        out.append("")
        out.append("| peer | connects/s | RSS after | RSS per session |")
        out.append("|---|---:|---:|---:|")
        for p in ["livebusd"] + PEERS_ONLY:
            rs = select(ses, peer=p)
            if not rs:
                continue
            c = stats([num(r, "connects_per_s") for r in rs])
            after = stats([(num(r, "rss_after_kb") or 0) / 1024 for r in rs])
            per = stats([num(r, "rss_per_session_kb") for r in rs])
            sess[p] = (after, per)
            out.append(
                f"| {p} | {cell(c, fmt_rate)} | {cell(after, lambda x: f'{x:.0f} MB')} | "
                f"{cell(per, lambda x: f'{x:.1f} KB')} |"
            )

    res = [r for r in rows if r.get("mode") == "resume"]
    resume = None
    if res:
        out.append("")
        out.append("### 4. Resume")
        out.append("")
        out.append(
            f"A session that missed {res[0].get('missed')} updates reconnects: livebusd with HELLO `resume` "
            "{token, topics}; mosquitto as an MQTT persistent session (clean session 0, QoS 1, its default "
            "20 messages in flight). Redis pub/sub and NATS core have no resume: what is published while a "
            "subscriber is away is lost. Time from `connect()` to the last missed update read (livebusd: and "
            "its UPTODATE)."
        )
        out.append("")
        out.append("| peer | caught up after | handshake answered after | updates replayed |")
        out.append("|---|---:|---:|---:|")
        for p in ["livebusd", "mosquitto"]:
            rs = select(res, peer=p)
            if not rs:
                continue
            t = stats([num(r, "caught_up_ms") for r in rs])
            w = stats([num(r, "welcome_ms") for r in rs])
            if p == "livebusd":
                resume = t
            rep = ", ".join(sorted({r.get("replayed", "?") for r in rs}))
            out.append(f"| {p} | {cell(t, lambda x: f'{x:.2f} ms')} | {cell(w, lambda x: f'{x:.2f} ms')} | {rep} |")

    pubs = [r for r in rows if r.get("mode") == "publish"]
    sq = [r for r in rows if r.get("mode") == "sqlite"]
    pubrate = {}
    if pubs or sq:
        out.append("")
        out.append("### 5. Publisher throughput: durable PUBLISH → ACK")
        out.append("")
        w = pubs[0].get("window", "?") if pubs else "?"
        out.append(
            f"One publisher connection, no subscriber, at most {w} PUBLISHes unacknowledged (written up to 64 frames "
            "per `write()`, as a pipelining client does); ACKs per second. Each ACK means the event is in the store "
            "(PROTOCOL.md §5.7): with the default `--sync normal` durable across a crash of the daemon, with "
            "`--sync full` across power loss (an fsync per commit). Beside it, in the same run on the same disk, the "
            "reference the issue names: SQLite alone (WAL, the same `synchronous`) committing 100-row "
            "transactions of the same body."
        )
        out.append("")
        out.append("| sync | livebusd ACKs/s | SQLite 100-row batches, rows/s | livebusd / SQLite |")
        out.append("|---|---:|---:|---:|")
        for sync in ("normal", "full"):
            a_ = stats([num(r, "acks_per_s") for r in select(pubs, sync=sync)])
            b_ = stats([num(r, "rows_per_s") for r in select(sq, sync=sync)])
            pubrate[sync] = (a_, b_)
            ratio = f"{a_[0] / b_[0]:.3f}×" if a_ and b_ and b_[0] else "–"
            label = "normal (default)" if sync == "normal" else "full (`--sync full`)"
            out.append(f"| {label} | {cell(a_, fmt_rate)} | {cell(b_, fmt_rate)} | {ratio} |")

    al = [r for r in rows if r.get("mode") == "allocs"]
    marginal = None
    fanout_path = None  # allocations per delivery on the fan-out path, from the sampled stacks (allocsites.py)
    if al:
        out.append("")
        out.append("### 6. Allocations per delivered EVENT (steady state)")
        out.append("")
        out.append(
            "livebusd under `alloccount.so` (an LD_PRELOAD shim counting malloc, calloc, realloc, posix_memalign, "
            "aligned_alloc, memalign; BENCHMARKS.md \"Allocations\"), closed-loop fan-out, counters read at the "
            "start and the end of the measured window. *Per delivery* divides all of the window's allocations by "
            "its deliveries (per-PUBLISH work included); *marginal* is what one more subscriber costs per event: "
            "(allocations per PUBLISH at the larger N − at the smaller N) / (difference of N), paired by run."
        )
        out.append("")
        out.append("| N | allocations per delivery | allocations per PUBLISH | bytes allocated per delivery |")
        out.append("|---:|---:|---:|---:|")
        ns = sorted({int(r["subs"]) for r in al})
        for n in ns:
            rs = select(al, subs=str(n))
            out.append(
                f"| {n} | {cell(stats([pos(num(r, 'allocs_per_delivery')) for r in rs]), lambda x: f'{x:.2f}')} | "
                f"{cell(stats([pos(num(r, 'allocs_per_publish')) for r in rs]), lambda x: f'{x:.1f}')} | "
                f"{cell(stats([pos(num(r, 'alloc_bytes_per_delivery')) for r in rs]), lambda x: f'{x:.0f} B')} |"
            )
        if len(ns) >= 2:
            lo, hi = ns[0], ns[-1]
            vals = []
            for run in sorted({r.get("run") for r in al}):
                a_lo = [num(r, "allocs_per_publish") for r in select(al, subs=str(lo), run=run)]
                a_hi = [num(r, "allocs_per_publish") for r in select(al, subs=str(hi), run=run)]
                if a_lo and a_hi and a_lo[0] is not None and a_hi[0] is not None and a_lo[0] >= 0 and a_hi[0] >= 0:
                    vals.append((a_hi[0] - a_lo[0]) / (hi - lo))
            marginal = stats(vals)
            out.append("")
            out.append(
                f"Marginal allocations per delivered EVENT (N = {lo} → {hi}): "
                f"**{cell(marginal, lambda x: f'{x:.2f}')}**."
            )
        irregular = [r for r in al if (num(r, "resent") or 0) > 0 or abs(num(r, "loss") or 0) > 1e-9]
        if irregular:
            out.append("")
            out.append("Irregular allocation runs (EVENTs re-sent with re-converted instants, or deliveries missing; "
                       "their allocations are in the window but not counted as deliveries): " + "; ".join(
                           f"N={r.get('subs')} run {r.get('run')}: re-sent {r.get('resent')}, loss {r.get('loss')}"
                           for r in irregular))
        import os
        import subprocess
        top = ns[-1]
        stacks = os.path.join(profile, f"alloc-stacks-N{top}.txt")
        ap = stats([pos(num(r, "allocs_per_delivery")) for r in select(al, subs=str(top))])
        if os.path.exists(stacks):
            try:
                r = subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                 "allocsites.py"), stacks]
                                   + ([f"{ap[0]:.4f}"] if ap else []),
                                   capture_output=True, text=True, timeout=300)
                table = r.stdout.strip()
                for ln in table.splitlines():
                    if ln.startswith("| fan-out"):
                        try:
                            fanout_path = float(ln.rstrip(" |").rsplit("|", 1)[-1])
                        except ValueError:
                            pass
            except (OSError, subprocess.SubprocessError) as e:
                table = f"(allocsites.py failed: {e})"
            if table:
                out.append("")
                out.append(f"Where they are allocated (N = {top}; every 97th allocation of the measured windows "
                           f"sampled with its stack, `alloc-stacks-N{top}.txt`"
                           + (f"; *allocations per delivery* = share × the {ap[0]:.2f} above" if ap else "")
                           + "; the top 25 sites):")
                out.append("")
                out.extend(table.splitlines())

    lay = [r for r in rows if r.get("peer") == "livebus-layout"]
    layout = bare = None
    if lay:
        out.append("")
        out.append("### 7. Layout engine")
        out.append("")
        ok = [r for r in lay if "layouts_per_s" in r]
        if ok:
            layout = stats([num(r, "layouts_per_s") for r in ok])
            bare = stats([num(r, "bare_layouts_per_s") for r in ok])
            r0 = ok[0]
            out.append(
                f"`LayoutEngine.layout` over every catalog device × fold state × orientation × screen layout "
                f"({r0.get('postures')} postures, {r0.get('inputs')} inputs), one thread (pinned to CPU 0): "
                f"**{cell(layout, fmt_rate)} layouts/s** with map markers and the tag sheet (6 tags); "
                f"{cell(bare, fmt_rate)} layouts/s for the bare screens (no markers, no sheet)."
            )
        else:
            out.append("The layout benchmark did not build or run (see layout-build.log).")

    out.append("")
    out.append("### Targets (issue 15, \"Done when\")")
    out.append("")
    out.append(
        "Medians of this run; the peer value is from the same run. *100 % delivered* is met at ≥ 99.5 % of the "
        "offered deliveries arriving within the measured window (messages in flight at its edges)."
    )
    out.append("")
    out.append("| target | measured (livebusd) | peer value (same run) | verdict |")
    out.append("|---|---|---|---|")

    def verdict(ok):
        if ok is None:
            return "not measured"
        return "met" if ok else "**MISSED**"

    def row(target, measured, peer, ok):
        out.append(f"| {target} | {measured} | {peer} | {verdict(ok)} |")

    for n in (100, 1000):
        lb, rd = thr.get(("livebusd", n)), thr.get(("redis", n))
        if lb or rd:
            row(f"fan-out N={n:,} ≥ Redis pub/sub",
                f"{fmt_rate(lb[0]) if lb else '–'} msg/s" + (f" ({lb[0] / rd[0]:.3f}×)" if lb and rd else ""),
                f"Redis {fmt_rate(rd[0]) if rd else '–'} msg/s", (lb[0] >= rd[0]) if lb and rd else None)
        else:
            row(f"fan-out N={n:,} ≥ Redis pub/sub", "not in this run", "–", None)
    for sync, goal in (("normal", 150000), ("full", 50000)):
        a_, b_ = pubrate.get(sync, (None, None))
        row(f"publisher PUBLISH → ACK ≥ {goal // 1000} k/s, `--sync {sync}`" + (" (default)" if sync == "normal" else ""),
            f"{fmt_rate(a_[0])}/s" if a_ else "–",
            f"SQLite 100-row batches {fmt_rate(b_[0])} rows/s" if b_ else "–",
            (a_[0] >= goal) if a_ else None)

    def share_of(p, n):
        l_ = latp99.get((p, n))
        return l_[1][0] if l_ and l_[1] else None

    def p_of(p, n, key):
        rs = select(lat, peer=p, subs=str(n))
        s_ = stats([num(r, key) for r in rs])
        return s_[0] if s_ else None

    for n in (1, 10, 100):
        sh, rsh = share_of("livebusd", n), share_of("redis", n)
        row(f"10,000 msg/s offered to N={n}: 100 % delivered",
            f"{100 * min(sh, 1):.1f} %" if sh is not None else "–",
            f"Redis {100 * min(rsh, 1):.1f} %" if rsh is not None else "–", (sh >= 0.995) if sh is not None else None)
    for n, key, goal, name in ((1, "p50_us", 100, "p50 ≤ 100 µs"), (100, "p99_us", 1000, "p99 ≤ 1 ms")):
        v, rv, sh = p_of("livebusd", n, key), p_of("redis", n, key), share_of("livebusd", n)
        note = f" ({100 * min(sh, 1):.0f} % delivered)" if sh is not None and sh < 0.995 else ""
        row(f"10,000 msg/s offered to N={n}: {name}", (fmt_us(v) + note) if v is not None else "–",
            f"Redis {fmt_us(rv)}" if rv is not None else "–",
            (v <= goal and (sh or 0) >= 0.995) if v is not None else None)
    mq = select(res, peer="mosquitto")
    mqs = stats([num(r, "caught_up_ms") for r in mq])
    row("resume of 1,000 missed updates ≤ 5 ms", f"{resume[0]:.2f} ms" if resume else "–",
        f"mosquitto persistent session {mqs[0]:.2f} ms" if mqs else "–", (resume[0] <= 5) if resume else None)
    cnt = int(ses[0].get("count", 0)) if ses else 0
    full = cnt >= 10000
    if "livebusd" in sess:
        after = sess["livebusd"][0]
        rafter = sess.get("redis", (None, None))[0]
        row(f"{cnt:,} idle sessions ≤ 100 MB RSS", f"{after[0]:.0f} MB",
            f"Redis {rafter[0]:.0f} MB" if rafter else "–",
            (after[0] <= 100) if full else None)
        if not full:
            out[-1] = out[-1].replace("not measured", f"not checked (quick run: {cnt} sessions)")
        c_lb = stats([num(r, "connects_per_s") for r in select(ses, peer="livebusd")])
        c_rd = stats([num(r, "connects_per_s") for r in select(ses, peer="redis")])
        row("idle sessions: connects/s ≥ Redis", f"{fmt_rate(c_lb[0])}/s" if c_lb else "–",
            f"Redis {fmt_rate(c_rd[0])}/s" if c_rd else "–", (c_lb[0] >= c_rd[0]) if c_lb and c_rd else None)
    if al:
        top = max(int(r["subs"]) for r in al)
        ap = stats([pos(num(r, "allocs_per_delivery")) for r in select(al, subs=str(top))])
        measured = (f"marginal {marginal[0]:.2f} per delivery" if marginal else "marginal –") + (
            f"; all of the window's / deliveries at N={top}: {ap[0]:.2f}" if ap else "")
        if fanout_path is not None:
            # The stacks say what the fan-out itself allocates; the marginal also carries per-session work (probes,
            # announcements) whenever the PUBLISH rate is low.
            measured += f"; fan-out path (sampled stacks): {fanout_path:.3f} per delivery"
            state = "reported" + (": none on the fan-out path, as the design asks" if fanout_path < 0.05
                                  else ": not zero on the fan-out path")
        else:
            state = "reported" + ("" if not marginal else (": none, as the design asks" if marginal[0] < 0.05 else ": not zero"))
        out.append(f"| allocations per delivered EVENT (steady state) are reported | {measured} | – | {state} |")
    else:
        row("allocations per delivered EVENT (steady state) are reported", "not in this run", "–", None)

    import os
    for name, what in (("publish", "1 publisher, no subscriber: the per-PUBLISH path, store and ACK"),
                       ("fanout", "100 sessions, 10 topics: the per-delivery path"),
                       ("resume", "a session reconnecting after 1,000 missed updates, twice: the replay path")):
        path = os.path.join(profile, f"profile-{name}-inclusive.txt")
        try:
            with open(path) as f:
                prof = f.read().strip()
            with open(os.path.join(profile, f"profile-{name}-run.txt")) as f:
                run = {k: v for k, v in (t.split("=", 1) for t in f.read().split() if "=" in t)}
        except OSError:
            continue
        if not prof:
            continue
        out.append("")
        out.append(f"### Profile `{name}` (callgrind, livebusd; {what})")
        out.append("")
        counts = (f"2 resumes of {run.get('missed', '?')} missed updates under callgrind. " if name == "resume" else
                  f"{run.get('published', run.get('acked', '?'))} PUBLISHes, {run.get('delivered', 0)} deliveries under callgrind. ")
        out.append(counts +
                   "Inclusive instruction counts of LiveBus functions (and Foundation JSON); "
                   f"the tree is in `profile-{name}-tree.txt`.")
        out.append("")
        out.append("```")
        out.extend(prof.splitlines()[:45])
        out.append("```")
    try:
        with open(os.path.join(profile, "profile-sessions-massif.txt")) as f:
            massif = f.read().strip().splitlines()
    except OSError:
        massif = []
    if massif:
        out.append("")
        out.append("### Profile `sessions` (massif, livebusd; 1,000 idle sessions: the heap at its peak)")
        out.append("")
        out.append("The peak snapshot's allocation tree (sites above 1 % of the heap; `ms_print massif-sessions.out` "
                   "for all). Heap only: RSS also holds stacks, code and what libraries map themselves.")
        out.append("")
        out.append("```")
        out.extend(massif[:60])
        out.append("```")
    print("\n".join(out))


def splice(doc, results):
    with open(doc) as f:
        text = f.read()
    with open(results) as f:
        new = f.read().strip()
    a, b = text.find(BEGIN), text.find(END)
    if a < 0 or b < a:
        sys.exit(f"{doc}: markers {BEGIN} … {END} not found")
    text = text[: a + len(BEGIN)] + "\n" + new + "\n" + text[b:]
    with open(doc, "w") as f:
        f.write(text)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--splice":
        splice(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 4:
        main(sys.argv[1], sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)

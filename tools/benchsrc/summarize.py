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
FAN_PEERS = ["livebusd", "redis", "mosquitto", "nats", "raw-socket", "raw-1write"]
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
    others = [p for p in peers if p != "livebusd"]
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
        "Offered load 10,000 msg/s (N = 1000: 1,000 msg/s, the same 1 M deliveries/s). p50 / p99 / p99.9 over "
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

    lay = [r for r in rows if r.get("peer") == "livebus-layout"]
    layout = bare = None
    if lay:
        out.append("")
        out.append("### 5. Layout engine")
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
    out.append("### Targets")
    out.append("")
    out.append("| target | measured | verdict |")
    out.append("|---|---|---|")

    def verdict(ok):
        return "met" if ok else "**MISSED**"

    lb100, rd100, raw100 = thr.get(("livebusd", 100)), thr.get(("redis", 100)), thr.get(("raw-socket", 100))
    if lb100 and rd100:
        out.append(
            f"| fan-out N=100 ≥ Redis pub/sub | {fmt_rate(lb100[0])} vs {fmt_rate(rd100[0])} msg/s "
            f"({lb100[0] / rd100[0]:.3f}×) | {verdict(lb100[0] >= rd100[0])} |"
        )
    if lb100 and raw100:
        out.append(
            f"| fan-out N=100 within 2× of raw socket | {fmt_rate(lb100[0])} vs {fmt_rate(raw100[0])} msg/s "
            f"(raw is {raw100[0] / lb100[0]:.1f}× faster) | {verdict(lb100[0] * 2 >= raw100[0])} |"
        )
    l = latp99.get(("livebusd", 100))
    if l and l[0]:
        share = l[1][0] if l[1] else 0
        out.append(
            f"| p99 < 1 ms at 10,000 msg/s to 100 sessions | p99 {fmt_us(l[0][0])}, "
            f"{100 * min(share, 1):.0f} % of the offered load delivered | {verdict(l[0][0] < 1000 and share > 0.98)} |"
        )
    if "livebusd" in sess:
        after, per = sess["livebusd"]
        cnt = int(ses[0].get("count", 0))
        out.append(
            f"| {cnt:,} sessions < 200 MB RSS | {after[0]:.0f} MB ({per[0]:.1f} KB per session) | "
            f"{verdict(after[0] < 200) if cnt >= 10000 else 'not checked (quick run: ' + str(cnt) + ' sessions)'} |"
        )
    if resume:
        out.append(f"| resume of 1,000 missed < 10 ms | {resume[0]:.2f} ms | {verdict(resume[0] < 10)} |")
    if layout:
        b = f"; bare screens {fmt_rate(bare[0])}/s" if bare else ""
        out.append(
            f"| layout > 100,000/s on one core | {fmt_rate(layout[0])}/s with markers and sheet{b} | "
            f"{verdict(layout[0] > 100000)} |"
        )

    import os
    for name, what in (("publish", "1 session, 1 topic: the per-PUBLISH path with a full replay log"),
                       ("fanout", "100 sessions, 10 topics: the per-delivery path")):
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
        out.append(f"{run.get('published', '?')} PUBLISHes, {run.get('delivered', '?')} deliveries under callgrind. "
                   "Inclusive instruction counts of LiveBus functions (and Foundation JSON); "
                   f"the tree is in `profile-{name}-tree.txt`.")
        out.append("")
        out.append("```")
        out.extend(prof.splitlines()[:45])
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

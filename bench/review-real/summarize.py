#!/usr/bin/env python3
"""Figures of one run of run.py: per rule, verdicts, noise, precision, recall, speed.

Reads a results file (JSON Lines from run.py), corpus.toml and judgements.toml. A finding is
matched to a judgement by (project, commit, rule, file, line); one that has none is
"unjudged" and listed at the end (with a stub to paste into judgements.toml after reading
the diff; facts.py shows what to read).

Figures (README.md says what each means):
  - per rule: findings, true, nit, false, unjudged — on ordinary commits, then on bad ones;
  - verdicts over ordinary commits, and the BLOCKs without a true critical finding;
  - findings of medium or higher per ordinary commit (all, and the true ones);
  - share of high/critical findings judged true;
  - recall over the bad cases: caught when a finding judged true is in the case's file at a
    line within [line - 2, line_end + 2] (line_end = line when the case is one line), so a
    size finding that happens to sit on that line does not count; also shown: caught by a
    finding of medium or higher, any finding in the file, and cases whose only nearby
    findings are unjudged ("judge?");
  - wall time per review (median, mean, max).

Usage: summarize.py RESULTS [--corpus corpus.toml] [--judgements judgements.toml]
"""
import argparse
import json
import statistics
import tomllib
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEVERITIES = ["critical", "high", "medium", "low"]
MEDIUM_UP = {"critical", "high", "medium"}
SLACK = 2


def key(project, commit, rule, file, line):
    return (project, commit, rule, file, line or 0)


def load(a):
    corpus = tomllib.loads(Path(a.corpus).read_text())
    judgements = {}
    if Path(a.judgements).exists():
        for j in tomllib.loads(Path(a.judgements).read_text()).get("judgement", []):
            judgements[key(j["project"], j["commit"], j["rule"], j["file"], j.get("line"))] = j
    runs = {}
    for line in open(a.results):
        r = json.loads(line)
        runs[(r["project"], r["commit"])] = r  # a commit with two bad cases ran twice
    return corpus, judgements, runs


def verdict_of(judgements, r, f):
    j = judgements.get(key(r["project"], r["commit"], f["rule"], f["file"], f.get("line")))
    return j["verdict"] if j else None


def rule_table(title, runs, judgements):
    rows = defaultdict(Counter)
    for r in runs:
        for f in r.get("findings", []):
            row = rows[f["rule"]]
            row["findings"] += 1
            row[f.get("severity", "?")] += 1
            row[verdict_of(judgements, r, f) or "unjudged"] += 1
    print(f"\n## Per rule, {title} ({len(runs)} commits)")
    print(f"{'rule':22} {'findings':>8} {'true':>5} {'nit':>5} {'false':>5} {'unjudged':>8}  severities")
    total = Counter()
    for rule, c in sorted(rows.items(), key=lambda kv: -kv[1]["findings"]):
        sev = " ".join(f"{s}:{c[s]}" for s in SEVERITIES if c[s])
        print(f"{rule:22} {c['findings']:8} {c['true']:5} {c['nit']:5} {c['false']:5} "
              f"{c['unjudged']:8}  {sev}")
        total.update(c)
    print(f"{'TOTAL':22} {total['findings']:8} {total['true']:5} {total['nit']:5} "
          f"{total['false']:5} {total['unjudged']:8}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--corpus", default=str(HERE / "corpus.toml"))
    ap.add_argument("--judgements", default=str(HERE / "judgements.toml"))
    a = ap.parse_args()
    corpus, judgements, runs = load(a)
    cases = corpus["commit"]
    ordinary = [runs[(c["project"], c["commit"])] for c in cases
                if c["kind"] == "ordinary" and (c["project"], c["commit"]) in runs]
    bad_keys = list(dict.fromkeys((c["project"], c["commit"]) for c in cases if c["kind"] == "bad"))
    bad = [runs[k] for k in bad_keys if k in runs]
    errors = [r for r in runs.values() if "error" in r]

    print(f"# review-real: {a.results}")
    print(f"{len(ordinary)} ordinary commits from {len({r['project'] for r in ordinary})} projects, "
          f"{len(bad)} bad commits ({sum(c['kind'] == 'bad' for c in cases)} cases); "
          f"{len(errors)} runs without JSON")
    for r in errors:
        print(f"  ERROR {r['project']} {r['commit'][:10]}: {r['error'][:200]}")

    rule_table("ordinary commits", ordinary, judgements)
    rule_table("bad commits", bad, judgements)

    print("\n## Verdicts over ordinary commits")
    verdicts = Counter(r.get("verdict", "ERROR") for r in ordinary)
    print("  " + ", ".join(f"{v}: {verdicts[v]}" for v in ("APPROVE", "CONDITIONAL", "BLOCK", "ERROR")
                           if verdicts[v]))
    wrong_blocks = []
    for r in ordinary:
        if r.get("verdict") != "BLOCK":
            continue
        crit = [f for f in r.get("findings", []) if f.get("severity") == "critical"]
        if not any(verdict_of(judgements, r, f) == "true" for f in crit):
            wrong_blocks.append(r)
    print(f"  BLOCKs without a true critical finding: {len(wrong_blocks)} of {verdicts['BLOCK']}")
    for r in wrong_blocks:
        rules = sorted({f["rule"] for f in r.get("findings", []) if f.get("severity") == "critical"})
        print(f"    {r['project']} {r['commit'][:10]}: {', '.join(rules)}")
    cond_rules = Counter()
    for r in ordinary:
        if r.get("verdict") == "CONDITIONAL":
            cond_rules[tuple(sorted({f["rule"] for f in r.get("findings", [])
                                     if f.get("severity") in ("high", "medium")}))] += 1
    print("  CONDITIONAL because of: " + "; ".join(f"{'+'.join(k) or '(none)'} ×{n}"
                                                    for k, n in cond_rules.most_common(8)))

    n = len(ordinary) or 1
    med = [(r, f) for r in ordinary for f in r.get("findings", []) if f.get("severity") in MEDIUM_UP]
    med_true = [x for x in med if verdict_of(judgements, *x) == "true"]
    print("\n## Noise on ordinary commits")
    print(f"  findings of medium or higher per ordinary commit: {len(med) / n:.2f} "
          f"({len(med)} in {len(ordinary)}); true ones: {len(med_true) / n:.2f}")

    print("\n## High/critical precision")
    for title, pool in (("ordinary", ordinary), ("bad", bad), ("all", ordinary + bad)):
        hc = [(r, f) for r in pool for f in r.get("findings", []) if f.get("severity") in ("critical", "high")]
        t = sum(verdict_of(judgements, *x) == "true" for x in hc)
        u = sum(verdict_of(judgements, *x) is None for x in hc)
        share = f"{100 * t / len(hc):.0f}%" if hc else "n/a"
        print(f"  {title:8}: {t} true of {len(hc)} high/critical findings ({share}); unjudged {u}")

    print("\n## Recall over the bad cases "
          f"(a true finding in the file within ±{SLACK} lines of the case's line or lines)")
    caught = in_file = caught_med = pending = 0
    by_class = defaultdict(Counter)
    rows = []
    for c in (c for c in cases if c["kind"] == "bad"):
        r = runs.get((c["project"], c["commit"]))
        lo, hi = c["line"] - SLACK, c.get("line_end", c["line"]) + SLACK
        fs = [f for f in (r or {}).get("findings", []) if f["file"] == c["file"]]
        near = [f for f in fs if f.get("line") and lo <= f["line"] <= hi]
        named = [f for f in near if verdict_of(judgements, r, f) == "true"]
        waiting = [f for f in near if verdict_of(judgements, r, f) is None]
        hit, hit_med = bool(named), any(f.get("severity") in MEDIUM_UP for f in named)
        caught += hit
        caught_med += hit_med
        pending += bool(waiting) and not hit
        in_file += bool(fs)
        by_class[c["class"]]["cases"] += 1
        by_class[c["class"]]["caught"] += hit
        got = ", ".join(sorted({f"{f['rule']}:{f.get('line')}/{f.get('severity')}"
                                f"/{verdict_of(judgements, r, f) or 'unjudged'}" for f in near}))
        state = "CAUGHT" if hit else ("judge?" if waiting else "missed")
        rows.append(f"  {state:6} {c['project']:14} {c['commit'][:10]} "
                    f"{c['file']}:{c['line']} [{c['class']}] {got}")
    total = sum(c["kind"] == "bad" for c in cases) or 1
    print(f"  caught: {caught}/{total} ({100 * caught / total:.0f}%); with medium or higher: "
          f"{caught_med}/{total}; any finding in the file: {in_file}/{total}; "
          f"near findings still to judge: {pending}")
    print("  by class: " + ", ".join(f"{k} {v['caught']}/{v['cases']}"
                                     for k, v in sorted(by_class.items())))
    print("\n".join(rows))

    secs = [r["seconds"] for r in runs.values() if "seconds" in r]
    if secs:
        print(f"\n## Time per review: median {statistics.median(secs) * 1000:.1f} ms, "
              f"mean {statistics.mean(secs) * 1000:.1f} ms, max {max(secs) * 1000:.1f} ms "
              f"({len(secs)} runs)")

    unjudged = [(r, f) for r in ordinary + bad for f in r.get("findings", [])
                if verdict_of(judgements, r, f) is None]
    print(f"\n## Unjudged findings: {len(unjudged)}")
    for r, f in unjudged:
        print(f"[[judgement]]  # {f.get('severity')} {f.get('reason', '')[:90]}\n"
              f'project = "{r["project"]}"\ncommit = "{r["commit"]}"\nrule = "{f["rule"]}"\n'
              f'file = "{f["file"]}"\nline = {f.get("line") or 0}\nverdict = ""\nwhy = ""\n')


if __name__ == "__main__":
    main()

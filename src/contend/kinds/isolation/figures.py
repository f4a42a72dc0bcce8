"""The isolation study's figures, in the kind of Volpert et al. Fig. 3 (isolation graph), Fig. 6 (timeline) and
Table 4 (heatmap). Each draws and returns a matplotlib Figure; report/figures.save writes it."""
from __future__ import annotations

import numpy as np

from ...metrics import Curve, reference_point
from ...report.figures import Figure, plt
from ...resources import RESOURCES
from .table import ESCAPED


def isolation_figure(title: str, reps: list[Curve], threshold: float, alpha: float = 0.01) -> Figure:
    """W_a over W_d: every repetition faint, their mean bold, the isolated and non-isolated lines,
    the change point marked and the area behind I_intFree shaded."""
    fig, ax = plt.subplots(figsize=(5.2, 3.8))
    for c in reps:
        ax.plot(c.w_d_ideal, c.w_a, color="tab:red", alpha=0.25, lw=1, marker=".")
    x = reps[0].w_d_ideal
    mean = np.mean([c.w_a for c in reps], axis=0)
    pooled = [np.concatenate([c.groups[k] for c in reps if k < len(c.groups)] or [np.array([])])
              for k in range(len(x))]  # every repetition's buckets of a step, for the change-point test
    ref = reference_point(x, mean, pooled, threshold, alpha)
    ax.plot(x, mean, color="tab:red", lw=2.2, marker="o", ms=4, label=f"measured (mean of {len(reps)})")
    ax.axhline(ref.w_a, color="tab:green", ls="--", lw=1.2, label="perfectly isolated")
    xs = np.linspace(ref.w_d, max(x.max(), ref.w_d + ref.w_a), 50)
    ax.plot(xs, np.maximum(ref.w_a - (xs - ref.w_d), 0), color="tab:blue", ls="--", lw=1.2, label="non-isolated")
    sel = x >= ref.w_d
    ax.fill_between(x[sel], mean[sel], color="tab:red", alpha=0.12, label="area in I_intFree")
    ax.plot([ref.w_d], [ref.w_a], "o", mfc="none", mec="tab:orange", ms=12, mew=2,
            label="change point" if ref.degraded else "reference (no change point)")
    ax.set_xlabel("W_d: disruptive load applied (fraction of capacity)")
    ax.set_ylabel("W_a: abiding use (fraction of capacity)")
    ax.set_xlim(left=0)
    ax.set_ylim(0, max(1e-3, float(np.nanmax([c.w_a.max() for c in reps]))) * 1.25)
    ax.set_title(title)
    ax.legend(fontsize=7.5, loc="lower left")
    ax.grid(alpha=0.3)
    return fig


def timeline_figure(title: str, samples, steps, trial: dict, events: list[dict]) -> Figure:
    """W_a, ideal W_d and achieved W_d over time (host view), limits drawn, escapes shaded, OOM kills and
    failed loads marked."""
    resource = RESOURCES[trial["resource"]]
    caps = resource.capacity(trial["capacity"])
    _, source, quantity, cap_key = resource.views[0]
    fig, ax = plt.subplots(figsize=(7.5, 3.4))
    sc = trial["scenario_params"]
    for tenant, color in (("abiding", "tab:green"), ("disruptive", "tab:red")):
        t, v = samples.series(tenant, source, quantity)
        w = v / caps[cap_key]
        ax.plot(t, w, color=color, lw=1, label=f"{'W_a' if tenant == 'abiding' else 'W_d'} achieved")
        over = w > sc["l_d"] * ESCAPED
        if tenant == "disruptive" and over.any():  # the escape: the disruptive tenant above its limit
            ax.fill_between(t, sc["l_d"], w, where=over, color="tab:red", alpha=0.3, lw=0,
                            label="escape (W_d above l_d)")
    st = sorted(steps, key=lambda s: s.step)
    tx = [p for s in st for p in (s.t_start, s.t_end)]
    ideal = [s.ideal.get("disruptive", 0.0) for s in st for _ in (0, 1)]
    ax.plot(tx, ideal, color="tab:red", ls=":", lw=1.5, label="W_d ideal")
    ax.axhline(sc["l_a"], color="tab:green", ls="--", lw=0.8, alpha=0.7, label="l_a (limit)")
    ax.axhline(sc["l_d"], color="tab:red", ls="--", lw=0.8, alpha=0.7, label="l_d (limit)")
    for e in events:
        if e["kind"] in ("oom-kill", "load-failed", "load-stopped", "load-restarted"):
            ax.axvline(e["t"], color="black", lw=0.8)
            ax.annotate(e["kind"], (e["t"], ax.get_ylim()[1] * 0.95), fontsize=7, rotation=90, va="top")
    ax.set_xlabel("time since probes started (s)")
    ax.set_ylabel(f"{trial['resource']} use (fraction of capacity)")
    ax.set_title(title)
    ax.legend(fontsize=7.5, ncol=3, loc="upper left")
    ax.grid(alpha=0.3)
    ax.set_ylim(bottom=0)
    return fig


def heatmap_figure(title: str, t4: dict, metrics: tuple[str, ...]) -> Figure:
    """Table 4 as a heatmap: rows runtime × scenario, columns resource × metric, coloured 0 (not isolated,
    red) to 1 (perfectly isolated, green); each cell says what the table (t4 with ± intervals) says: mean ±
    half its 95 % CI, `! (k)` for an escaped limit, or n/a (k), k the table's footnote."""
    cols = [(res, m) for res in t4["resources"] for m in metrics]
    rows = t4["rows"]
    grid = np.full((len(rows), len(cols)), np.nan)
    fig, ax = plt.subplots(figsize=(1.0 + 0.72 * len(cols), 1.2 + 0.42 * len(rows)))
    for i, r in enumerate(rows):
        for j, key in enumerate(cols):
            v = r["values"].get(key)
            text = r["cells"][key].replace("±", "\n±")
            if v is None:
                ax.text(j, i, text, ha="center", va="center", fontsize=6.5, color="0.35")
                continue
            grid[i, j] = v["value"]
            ax.text(j, i, text, ha="center", va="center", fontsize=7,
                    color="black" if 0.25 < v["value"] < 0.85 else "white")
    cmap = plt.get_cmap("RdYlGn").with_extremes(bad="0.92")  # n/a cells: light grey
    im = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, vmin=0, vmax=1, aspect="auto")
    ax.set_xticks(range(len(cols)), [f"{res}\n{m}" for res, m in cols], fontsize=7.5)
    ax.set_yticks(range(len(rows)), [f"{r['runtime']} · {r['scenario']}" for r in rows], fontsize=8)
    ax.tick_params(top=True, labeltop=True, bottom=False, labelbottom=False, length=0)
    for j in range(len(metrics), len(cols), len(metrics)):  # a rule between resources
        ax.axvline(j - 0.5, color="white", lw=3)
    fig.colorbar(im, ax=ax, fraction=0.03, pad=0.02, label="1 = perfectly isolated, 0 = not at all")
    ax.set_title(title, pad=28)
    return fig

"""The estimator page's SVG chart: efficiency against GPU count (or node count, when the job
names node counts) for the top-ranked instances.

Server-rendered: `efficiency_chart` computes every coordinate and label, and
templates/estimator/estimate.html only draws them (no script, no style attribute).
"""

from __future__ import annotations

import math
from typing import Any

from offerings.estimator.core import InstanceSpec, Job
from offerings.estimator.page import format_share

CHART_INSTANCES = 6
CHART = {"width": 680, "left": 56, "right": 16, "top": 16, "plot_height": 220, "bottom": 44}


def efficiency_chart(
    results: list[dict[str, Any]],
    job: Job,
    specs: dict[Any, InstanceSpec],
    provider_names: dict[str, str] | None = None,
) -> dict | None:
    """Geometry of the SVG chart of efficiency against the job's columns (GPU counts, or node
    counts) for the top instances, each named by its provider's name in the page's language
    (`provider_names`, by slug)."""
    names = provider_names or {}
    nodes = job.columns
    top: list[Any] = []
    for result in results:
        instance_id = result["instance"]["id"]
        if result["efficiency"] is not None and instance_id not in top:
            top.append(instance_id)
        if len(top) == CHART_INSTANCES:
            break
    if not top:
        return None
    width, left, right = CHART["width"], CHART["left"], CHART["right"]
    top_margin, plot_height = CHART["top"], CHART["plot_height"]
    plot_width = width - left - right
    logs = [math.log2(n) for n in nodes]
    low, high = min(logs), max(logs)

    def x(n: int) -> float:
        if high == low:
            return round(left + plot_width / 2, 1)
        return round(left + (math.log2(n) - low) / (high - low) * plot_width, 1)

    lowest = min(
        r["efficiency"]
        for r in results
        if r["instance"]["id"] in top and r["efficiency"] is not None
    )
    # Start the axis at the 20% step below the lowest point (at most 80%), so close curves
    # stay apart; the axis label says where it starts.
    floor = min(0.8, math.floor(lowest * 5) / 5)

    def y(efficiency: float) -> float:
        return round(top_margin + (1 - efficiency) / (1 - floor) * plot_height, 1)

    series = []
    for index, instance_id in enumerate(top):
        rows = sorted(
            (
                r
                for r in results
                if r["instance"]["id"] == instance_id and r["efficiency"] is not None
            ),
            key=lambda r: r["nodes"],
        )
        instance = rows[0]["instance"]
        per_node = specs[instance_id].gpu_count
        points = sorted(
            (
                {
                    "x": x(column),
                    "y": y(r["efficiency"]),
                    "fits": r["fits"],
                    "column": column,
                    "nodes": r["nodes"],
                    "efficiency": format_share(r["efficiency"]),
                }
                for r in rows
                for column in job.columns_of(r["nodes"], per_node)
            ),
            key=lambda point: point["column"],
        )
        series.append(
            {
                "index": index,
                "name": f"{names.get(instance['provider'], instance['provider'])} "
                f"{instance['name']}",
                "points": points,
                "polyline": " ".join(f"{p['x']},{p['y']}" for p in points),
                "legend_x": left + (index % 2) * (plot_width / 2),
                "legend_y": top_margin + plot_height + CHART["bottom"] + (index // 2) * 20,
            }
        )
    plot_bottom = top_margin + plot_height
    legend_rows = (len(series) + 1) // 2
    return {
        "width": width,
        "height": plot_bottom + CHART["bottom"] + legend_rows * 20,
        "left": left,
        "right": width - right,
        "top": top_margin,
        "bottom": plot_bottom,
        "x_label_y": plot_bottom + 34,
        "y_label_x": 14,
        "y_label_y": top_margin + plot_height / 2,
        "x_ticks": [{"x": x(n), "label": n} for n in nodes],
        "by_gpus": bool(job.gpus),
        "y_floor": f"{floor:.0%}",
        "y_ticks": [
            {"y": y(v), "label": f"{v:.0%}"}
            for v in (floor + i * (1 - floor) / 4 for i in range(5))
        ],
        "series": series,
    }

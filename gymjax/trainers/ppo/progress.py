"""The training progress bar's ``key=value`` pairs."""

from __future__ import annotations

import warnings
from typing import Any

from gymjax.trainers.hooks import Metrics


class Postfix:
    """The progress bar's ``key=value`` pairs: steps/s and the latest return, or the chosen metrics,
    each its latest value (evaluation metrics appear only after the epochs that evaluate)."""

    def __init__(self, keys: tuple[str, ...] | None):
        self.keys = keys
        self.latest: Metrics = {}
        self.checked = False

    def __call__(self, metrics: Metrics, latest_train_return: float) -> dict[str, str]:
        if self.keys is None:
            shown = metrics.get("eval/episode_return", latest_train_return)
            return {"sps": f"{metrics['sps']:,.0f}", "ret": f"{shown:.4g}"}
        self.latest.update((k, metrics[k]) for k in self.keys if k in metrics)
        if not self.checked:
            self.checked = True
            # eval/ and reference/ metrics are missing from the epochs that do not evaluate
            missing = [k for k in self.keys if k not in metrics and not k.startswith(("eval/", "reference/"))]
            if missing:
                warnings.warn(
                    f"progress_metrics: no {', '.join(map(repr, missing))} in the first epoch's metrics "
                    f"(it has {', '.join(sorted(metrics))})",
                    stacklevel=2,
                )
        return {k: _shown(self.latest[k]) for k in self.keys if k in self.latest}


def _shown(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return f"{value:,}" if isinstance(value, int) else f"{value:.4g}"

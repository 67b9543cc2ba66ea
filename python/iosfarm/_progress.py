"""Progress bars for Farm.wait, iosfarm.search and iosfarm.tune (tqdm.auto:
a text bar on a terminal, a widget in a notebook).

shown(progress): whether to draw one. progress=None (auto): only when stderr
is a terminal or the code runs in a Jupyter kernel; True: always (Error
"unimplemented" naming python3-tqdm when tqdm is missing); False: never.

ProgressBar(progress): a bar on sys.stderr (as it is when the bar is made)
when shown(progress), else an object whose methods do nothing. job(job)
shows a farm job's blocks done of its total and, after them, what the CLI's
progress line shows (its state and phase, stages profiled and the estimate,
cache hits); search(solved, total, measured) shows a local search's blocks
solved. close() ends it (again: nothing). Not thread-safe: one thread
updates a bar.
"""
import sys

from iosfarm._cli import error


def _in_notebook():
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        shell = ipython.get_ipython()
        return shell is not None and "IPKernelApp" in shell.config
    except Exception:  # an IPython without kernel config: not a notebook
        return False


def _tqdm():
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm


def shown(progress):
    if progress is False:
        return False
    if progress is True:
        if _tqdm() is None:
            raise error("progress=True needs tqdm (Debian: apt install python3-tqdm; "
                        "pip: pip install tqdm)", "unimplemented")
        return True
    if progress is not None:
        raise error(f"progress must be None (auto), True or False, got {progress!r}")
    interactive = _in_notebook() or (hasattr(sys.stderr, "isatty") and sys.stderr.isatty())
    return interactive and _tqdm() is not None


# Before the blocks' total is known, and after.
_COUNT_FORMAT = "{desc}: {n_fmt}/? blocks [{elapsed}{postfix}]"
_BAR_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} blocks [{elapsed}{postfix}]"


class ProgressBar:
    def __init__(self, progress, description=""):
        self._bar = None
        if shown(progress):
            self._bar = _tqdm()(total=None, desc=description, file=sys.stderr,
                                bar_format=_COUNT_FORMAT, dynamic_ncols=True, leave=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _set(self, done, total, description, postfix):
        bar = self._bar
        if bar is None:
            return
        if total and total > 0 and bar.total != total:
            bar.total = total
            bar.bar_format = _BAR_FORMAT
        bar.n = max(0, done)
        bar.set_description_str(description, refresh=False)
        bar.set_postfix_str(postfix, refresh=False)
        bar.refresh()

    def job(self, job):
        """Shows `job` (an iosfarm.Job)."""
        p = job.progress
        postfix = []
        if p.phase and job.state == "running":
            postfix.append(p.phase)
        estimate = f" (of ~{p.estimated_stages} estimated)" if p.estimated_stages is not None \
            else ""
        postfix.append(f"{p.stages_profiled} stages profiled{estimate}")
        postfix.append(f"{p.cache_hits} cache hits")
        self._set(p.blocks_done, p.blocks_total, f"job {job.id} {job.state}", ", ".join(postfix))

    def search(self, solved, total, measured, description="search"):
        """Shows a local search: `solved` of `total` blocks, `measured` stages."""
        self._set(min(solved, total), total, description, f"{measured} stages measured")

    def text(self, description):
        """Shows `description` alone (before any figures are known)."""
        if self._bar is not None:
            self._bar.set_description_str(description)

    def close(self):
        if self._bar is not None:
            self._bar.close()
            self._bar = None

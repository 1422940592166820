"""Types of the extension module `vmlab._vmlab` (crates/vmlab-py/src): the lab's calls, with
JSON text of the lab's serializable types in and out."""

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

Progress = Optional[Callable[[Dict[str, Any]], Any]]

class Error(Exception):
    """A vmlab run that failed (not a mistake in what was asked: that is ValueError)."""

def run(comparison: str, command: str, progress: Progress = None) -> str: ...
def run_many(
    comparisons: List[str], jobs: int, command: str, progress: Progress = None
) -> List[str]: ...
def reproduce(
    name: str,
    quick: bool,
    jobs: int,
    overrides: Sequence[Tuple[str, str]],
    command: str,
    traces: Optional[str] = None,
    trace: Optional[str] = None,
    reprice: Optional[str] = None,
    progress: Progress = None,
) -> str: ...
def profile(name: str, overrides: Sequence[Tuple[str, str]]) -> Tuple[str, str]: ...
def catalog() -> str: ...
def labt_count_keys() -> List[str]: ...
def render_comparison(report: str) -> Tuple[str, str]: ...
def version() -> Tuple[str, str]: ...
def record(
    program: str,
    args: List[str],
    output: str,
    keep_raw: bool = False,
    sample: Optional[str] = None,
    progress: Progress = None,
) -> str: ...

"""Type stubs of the native module (Rust, PyO3). Use the `dataformats`
package's API instead; these calls hand Arrow PyCapsules around."""

from typing import Any, Dict, List, Optional, Tuple

class FormatError(Exception):
    kind: str
    offset: Optional[int]
    format: Optional[str]

_Capsules = Tuple[Any, Any]

class Dataset:
    format: str
    version: str
    num_rows: int
    def schema_capsule(self) -> Any: ...
    def stream_capsule(
        self,
        columns: Optional[List[str]] = None,
        start: Optional[int] = None,
        end: Optional[int] = None,
        batch_size: int = 65536,
    ) -> Any: ...
    def read_stream(
        self,
        columns: Optional[List[str]] = None,
        start: Optional[int] = None,
        end: Optional[int] = None,
        batch_size: int = 65536,
        threads: int = 0,
    ) -> Any: ...
    def read_batch(self, start: int, end: int, columns: Optional[List[str]] = None) -> _Capsules: ...
    def batches(
        self,
        columns: Optional[List[str]] = None,
        start: Optional[int] = None,
        end: Optional[int] = None,
        batch_size: int = 65536,
    ) -> BatchIter: ...
    def splits(self, parts: int) -> List[Tuple[int, int]]: ...
    def validate(self) -> None: ...

class BatchIter:
    def next(self) -> Optional[_Capsules]: ...

class Loader:
    epoch: int
    def __init__(
        self,
        path: str,
        batch_size: int,
        columns: Optional[List[str]] = None,
        shuffle: bool = False,
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
        drop_last: bool = False,
        num_threads: Optional[int] = None,
    ) -> None: ...
    def set_epoch(self, epoch: int) -> None: ...
    def indices(self, worker: int = 0, num_workers: int = 1) -> List[int]: ...
    def __len__(self) -> int: ...
    def batches(self, worker: int = 0, num_workers: int = 1, prefetch: int = 2) -> LoaderIter: ...

class LoaderIter:
    def next(self) -> Optional[Tuple[_Capsules, List[int]]]: ...

def open(path: str) -> Dataset: ...
def detect(path: str) -> Optional[str]: ...
def convert(argv: List[str]) -> Dict[str, Any]: ...

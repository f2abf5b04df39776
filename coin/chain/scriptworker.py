"""The ``-par`` script-check worker process:
``python -m coin.chain.scriptworker <parent pid> <steal pipe fd>``.

It imports only the primitives, the script interpreter and coincurve (about 20 MiB
resident), reads batches of input checks as length-prefixed frames on stdin and
answers each with one frame on stdout: the batch's first failure, or None.  Before
starting a batch it reads the ids the node has sent on the steal pipe: a batch the
node took back is answered None unchecked.  It exits when its parent goes away: the
kernel kills it (PR_SET_PDEATHSIG) and, where that is unavailable, it sees
end-of-file on stdin at the next read.
"""

from __future__ import annotations

import ctypes
import os
import pickle
import signal
import struct
import sys
from typing import BinaryIO, List, Optional, Sequence, Set, Tuple

from coin.chain.scriptcheck import first_script_failure

#: Frame header: payload length, little-endian.
FRAME = struct.Struct("<I")
#: A batch id on the steal pipe (writes this small are atomic).
BATCH_ID = struct.Struct("<I")
#: prctl option: signal this process when the thread that created it exits.
PR_SET_PDEATHSIG = 1

#: One check as sent: (index in the block, serialized tx, spent scripts, flags).
Job = Tuple[int, bytes, Sequence[bytes], int]
#: The batch's first failure: (index in the block, input index, script error).
Failure = Optional[Tuple[int, int, str]]


def die_with_parent(parent: int) -> None:
    """Ask the kernel for SIGKILL when the parent dies; exit if it already has."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass  # not Linux: end-of-file on stdin is the signal
    if os.getppid() != parent:
        sys.exit(0)


def read_frame(stream: BinaryIO) -> Optional[bytes]:
    """The next frame's payload, or None at end of file."""
    header = stream.read(FRAME.size)
    if len(header) < FRAME.size:
        return None
    (length,) = FRAME.unpack(header)
    payload = stream.read(length)
    return payload if len(payload) == length else None


def check_batch(jobs: List[Job]) -> Failure:
    """The first failing input of the batch (jobs come in block order), or None."""
    for tx_index, raw, scripts, flags in jobs:
        failure = first_script_failure(raw, scripts, flags)
        if failure is not None:
            return (tx_index,) + failure
    return None


def stolen_ids(fd: int, stolen: Set[int]) -> None:
    """Add the batch ids waiting on the steal pipe (non-blocking) to ``stolen``."""
    try:
        data = os.read(fd, 4096)
    except BlockingIOError:
        return
    stolen.update(batch_id for (batch_id,) in BATCH_ID.iter_unpack(data))


def main() -> None:
    die_with_parent(int(sys.argv[1]))
    steal_fd = int(sys.argv[2])
    os.set_blocking(steal_fd, False)
    stolen: Set[int] = set()
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        payload = read_frame(stdin)
        if payload is None:
            return
        batch_id, jobs = pickle.loads(payload)
        stolen_ids(steal_fd, stolen)
        failure = None if batch_id in stolen else check_batch(jobs)
        if stolen:  # ids only grow: older ones (taken back too late) never come again
            stolen = {i for i in stolen if i > batch_id}
        answer = pickle.dumps(failure, pickle.HIGHEST_PROTOCOL)
        stdout.write(FRAME.pack(len(answer)) + answer)
        stdout.flush()


if __name__ == "__main__":
    main()

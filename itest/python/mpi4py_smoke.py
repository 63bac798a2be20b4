# mpi4py built for the MPI 5.0 standard ABI with our mpicc, run on weft: pickled and buffer
# point-to-point and collectives, a nonblocking barrier, split. Every rank asserts its results.
# With MPI4PY_SMOKE_LIBDIR set, every rank also asserts that the libmpi_abi.so.1 it loaded is
# the one in that directory (the swap really happened).
from mpi4py import MPI
import os
import sys
want = os.environ.get("MPI4PY_SMOKE_LIBDIR")
if want:
    with open("/proc/self/maps") as maps:
        libs = {l.split()[-1] for l in maps if "libmpi" in l and l.rstrip().endswith(".so.1")}
    dirs = {os.path.dirname(os.path.realpath(l)) for l in libs}
    assert dirs == {os.path.realpath(want)}, (libs, want)
c = MPI.COMM_WORLD
r, n = c.Get_rank(), c.Get_size()
assert MPI.Get_library_version().startswith("weft"), MPI.Get_library_version()
assert c.allreduce(r) == n * (n - 1) // 2
right, left = (r + 1) % n, (r - 1) % n
got = c.sendrecv(("hello", r), dest=right, source=left)
assert got == ("hello", left), got
import array
buf = array.array("i", [r] * 4)
out = array.array("i", [0] * 4)
c.Allreduce(buf, out, op=MPI.SUM)
assert list(out) == [n * (n - 1) // 2] * 4
b = c.bcast({"k": 42} if r == 0 else None, root=0)
assert b == {"k": 42}
g = c.gather(r * r, root=0)
if r == 0:
    assert g == [i * i for i in range(n)]
req = c.Ibarrier(); req.Wait()
sub = c.Split(r % 2, r)
assert sub.Get_size() == (n + 1 - r % 2) // 2
sub.Free()
if r == 0:
    print("mpi4py on weft:", MPI.Get_library_version(), "ranks", n, "OK")

//! Unscoped nonblocking requests for the C interfaces (MPI, OpenSHMEM): the caller promises the buffers outlive the request, as MPI requires. (Being written for issue 4.)

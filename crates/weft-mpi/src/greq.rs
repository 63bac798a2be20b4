//! Generalized requests (MPI-4.1 §13.2): MPI_Grequest_start and MPI_Grequest_complete.

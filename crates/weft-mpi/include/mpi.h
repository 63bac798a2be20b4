/* mpi.h of weft: the MPI 5.0 standard ABI (handles, constants, MPI_Status, types), written
 * from the standard's ABI tables. Programs compiled with it run on any library of the
 * standard ABI (libmpi_abi.so.1), and programs compiled for that ABI elsewhere run on weft.
 * Prototypes are declared for the functions weft implements (`weft info --mpi`); the
 * library also exports every other function of the ABI, reporting
 * MPI_ERR_UNSUPPORTED_OPERATION. */
#ifndef WEFT_MPI_H
#define WEFT_MPI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MPI_VERSION 5
#define MPI_SUBVERSION 0
#define MPI_ABI_VERSION 1
#define MPI_ABI_SUBVERSION 0

typedef intptr_t MPI_Aint;
typedef int64_t MPI_Offset;
typedef int64_t MPI_Count;
typedef int MPI_Fint;

typedef struct {
  int MPI_SOURCE;
  int MPI_TAG;
  int MPI_ERROR;
  int MPI_internal[5];
} MPI_Status;

/* Handles: pointers to incomplete types; predefined ones are small constants. */
typedef struct MPI_ABI_Op *MPI_Op;
typedef struct MPI_ABI_Comm *MPI_Comm;
typedef struct MPI_ABI_Group *MPI_Group;
typedef struct MPI_ABI_Win *MPI_Win;
typedef struct MPI_ABI_File *MPI_File;
typedef struct MPI_ABI_Session *MPI_Session;
typedef struct MPI_ABI_Message *MPI_Message;
typedef struct MPI_ABI_Info *MPI_Info;
typedef struct MPI_ABI_Errhandler *MPI_Errhandler;
typedef struct MPI_ABI_Request *MPI_Request;
typedef struct MPI_ABI_Datatype *MPI_Datatype;

#define WEFT_H(type, value) ((type)(intptr_t)(value))

#define MPI_OP_NULL WEFT_H(MPI_Op, 0x20)
#define MPI_SUM     WEFT_H(MPI_Op, 0x21)
#define MPI_MIN     WEFT_H(MPI_Op, 0x22)
#define MPI_MAX     WEFT_H(MPI_Op, 0x23)
#define MPI_PROD    WEFT_H(MPI_Op, 0x24)
#define MPI_BAND    WEFT_H(MPI_Op, 0x28)
#define MPI_BOR     WEFT_H(MPI_Op, 0x29)
#define MPI_BXOR    WEFT_H(MPI_Op, 0x2a)
#define MPI_LAND    WEFT_H(MPI_Op, 0x30)
#define MPI_LOR     WEFT_H(MPI_Op, 0x31)
#define MPI_LXOR    WEFT_H(MPI_Op, 0x32)
#define MPI_MINLOC  WEFT_H(MPI_Op, 0x38)
#define MPI_MAXLOC  WEFT_H(MPI_Op, 0x39)
#define MPI_REPLACE WEFT_H(MPI_Op, 0x3c)
#define MPI_NO_OP   WEFT_H(MPI_Op, 0x3d)

#define MPI_COMM_NULL  WEFT_H(MPI_Comm, 0x100)
#define MPI_COMM_WORLD WEFT_H(MPI_Comm, 0x101)
#define MPI_COMM_SELF  WEFT_H(MPI_Comm, 0x102)
#define MPI_GROUP_NULL  WEFT_H(MPI_Group, 0x108)
#define MPI_GROUP_EMPTY WEFT_H(MPI_Group, 0x109)
#define MPI_WIN_NULL WEFT_H(MPI_Win, 0x110)
#define MPI_FILE_NULL WEFT_H(MPI_File, 0x118)
#define MPI_SESSION_NULL WEFT_H(MPI_Session, 0x120)
#define MPI_MESSAGE_NULL    WEFT_H(MPI_Message, 0x128)
#define MPI_MESSAGE_NO_PROC WEFT_H(MPI_Message, 0x129)
#define MPI_INFO_NULL WEFT_H(MPI_Info, 0x130)
#define MPI_INFO_ENV  WEFT_H(MPI_Info, 0x131)
#define MPI_ERRHANDLER_NULL  WEFT_H(MPI_Errhandler, 0x140)
#define MPI_ERRORS_ARE_FATAL WEFT_H(MPI_Errhandler, 0x141)
#define MPI_ERRORS_ABORT     WEFT_H(MPI_Errhandler, 0x142)
#define MPI_ERRORS_RETURN    WEFT_H(MPI_Errhandler, 0x143)
#define MPI_REQUEST_NULL WEFT_H(MPI_Request, 0x180)

#define MPI_DATATYPE_NULL WEFT_H(MPI_Datatype, 0x200)
#define MPI_AINT    WEFT_H(MPI_Datatype, 0x201)
#define MPI_COUNT   WEFT_H(MPI_Datatype, 0x202)
#define MPI_OFFSET  WEFT_H(MPI_Datatype, 0x203)
#define MPI_PACKED  WEFT_H(MPI_Datatype, 0x207)
#define MPI_SHORT   WEFT_H(MPI_Datatype, 0x208)
#define MPI_INT     WEFT_H(MPI_Datatype, 0x209)
#define MPI_LONG    WEFT_H(MPI_Datatype, 0x20a)
#define MPI_LONG_LONG WEFT_H(MPI_Datatype, 0x20b)
#define MPI_LONG_LONG_INT MPI_LONG_LONG
#define MPI_UNSIGNED_SHORT WEFT_H(MPI_Datatype, 0x20c)
#define MPI_UNSIGNED       WEFT_H(MPI_Datatype, 0x20d)
#define MPI_UNSIGNED_LONG  WEFT_H(MPI_Datatype, 0x20e)
#define MPI_UNSIGNED_LONG_LONG WEFT_H(MPI_Datatype, 0x20f)
#define MPI_FLOAT   WEFT_H(MPI_Datatype, 0x210)
#define MPI_C_FLOAT_COMPLEX WEFT_H(MPI_Datatype, 0x212)
#define MPI_C_COMPLEX MPI_C_FLOAT_COMPLEX
#define MPI_CXX_FLOAT_COMPLEX WEFT_H(MPI_Datatype, 0x213)
#define MPI_DOUBLE  WEFT_H(MPI_Datatype, 0x214)
#define MPI_C_DOUBLE_COMPLEX WEFT_H(MPI_Datatype, 0x216)
#define MPI_CXX_DOUBLE_COMPLEX WEFT_H(MPI_Datatype, 0x217)
#define MPI_LOGICAL WEFT_H(MPI_Datatype, 0x218)
#define MPI_INTEGER WEFT_H(MPI_Datatype, 0x219)
#define MPI_REAL    WEFT_H(MPI_Datatype, 0x21a)
#define MPI_COMPLEX WEFT_H(MPI_Datatype, 0x21b)
#define MPI_DOUBLE_PRECISION WEFT_H(MPI_Datatype, 0x21c)
#define MPI_DOUBLE_COMPLEX WEFT_H(MPI_Datatype, 0x21d)
#define MPI_CHARACTER WEFT_H(MPI_Datatype, 0x21e)
#define MPI_LONG_DOUBLE WEFT_H(MPI_Datatype, 0x220)
#define MPI_C_LONG_DOUBLE_COMPLEX WEFT_H(MPI_Datatype, 0x224)
#define MPI_CXX_LONG_DOUBLE_COMPLEX WEFT_H(MPI_Datatype, 0x225)
#define MPI_FLOAT_INT  WEFT_H(MPI_Datatype, 0x228)
#define MPI_DOUBLE_INT WEFT_H(MPI_Datatype, 0x229)
#define MPI_LONG_INT   WEFT_H(MPI_Datatype, 0x22a)
#define MPI_2INT       WEFT_H(MPI_Datatype, 0x22b)
#define MPI_SHORT_INT  WEFT_H(MPI_Datatype, 0x22c)
#define MPI_LONG_DOUBLE_INT WEFT_H(MPI_Datatype, 0x22d)
#define MPI_2REAL      WEFT_H(MPI_Datatype, 0x230)
#define MPI_2DOUBLE_PRECISION WEFT_H(MPI_Datatype, 0x231)
#define MPI_2INTEGER   WEFT_H(MPI_Datatype, 0x232)
#define MPI_C_BOOL     WEFT_H(MPI_Datatype, 0x238)
#define MPI_CXX_BOOL   WEFT_H(MPI_Datatype, 0x239)
#define MPI_WCHAR      WEFT_H(MPI_Datatype, 0x23c)
#define MPI_INT8_T     WEFT_H(MPI_Datatype, 0x240)
#define MPI_UINT8_T    WEFT_H(MPI_Datatype, 0x241)
#define MPI_CHAR       WEFT_H(MPI_Datatype, 0x243)
#define MPI_SIGNED_CHAR WEFT_H(MPI_Datatype, 0x244)
#define MPI_UNSIGNED_CHAR WEFT_H(MPI_Datatype, 0x245)
#define MPI_BYTE       WEFT_H(MPI_Datatype, 0x247)
#define MPI_INT16_T    WEFT_H(MPI_Datatype, 0x248)
#define MPI_UINT16_T   WEFT_H(MPI_Datatype, 0x249)
#define MPI_INT32_T    WEFT_H(MPI_Datatype, 0x250)
#define MPI_UINT32_T   WEFT_H(MPI_Datatype, 0x251)
#define MPI_INT64_T    WEFT_H(MPI_Datatype, 0x258)
#define MPI_UINT64_T   WEFT_H(MPI_Datatype, 0x259)
#define MPI_LOGICAL1   WEFT_H(MPI_Datatype, 0x2c0)
#define MPI_INTEGER1   WEFT_H(MPI_Datatype, 0x2c1)
#define MPI_LOGICAL2   WEFT_H(MPI_Datatype, 0x2c8)
#define MPI_INTEGER2   WEFT_H(MPI_Datatype, 0x2c9)
#define MPI_REAL2      WEFT_H(MPI_Datatype, 0x2ca)
#define MPI_LOGICAL4   WEFT_H(MPI_Datatype, 0x2d0)
#define MPI_INTEGER4   WEFT_H(MPI_Datatype, 0x2d1)
#define MPI_REAL4      WEFT_H(MPI_Datatype, 0x2d2)
#define MPI_COMPLEX4   WEFT_H(MPI_Datatype, 0x2d3)
#define MPI_LOGICAL8   WEFT_H(MPI_Datatype, 0x2d8)
#define MPI_INTEGER8   WEFT_H(MPI_Datatype, 0x2d9)
#define MPI_REAL8      WEFT_H(MPI_Datatype, 0x2da)
#define MPI_COMPLEX8   WEFT_H(MPI_Datatype, 0x2db)
#define MPI_LOGICAL16  WEFT_H(MPI_Datatype, 0x2e0)
#define MPI_INTEGER16  WEFT_H(MPI_Datatype, 0x2e1)
#define MPI_REAL16     WEFT_H(MPI_Datatype, 0x2e2)
#define MPI_COMPLEX16  WEFT_H(MPI_Datatype, 0x2e3)
#define MPI_COMPLEX32  WEFT_H(MPI_Datatype, 0x2eb)

enum { MPI_F_STATUS_SIZE = 8, MPI_F_SOURCE = 0, MPI_F_TAG = 1, MPI_F_ERROR = 2 };

/* Error classes. */
enum {
  MPI_SUCCESS = 0, MPI_ERR_BUFFER = 1, MPI_ERR_COUNT = 2, MPI_ERR_TYPE = 3, MPI_ERR_TAG = 4,
  MPI_ERR_COMM = 5, MPI_ERR_RANK = 6, MPI_ERR_REQUEST = 7, MPI_ERR_ROOT = 8, MPI_ERR_GROUP = 9,
  MPI_ERR_OP = 10, MPI_ERR_TOPOLOGY = 11, MPI_ERR_DIMS = 12, MPI_ERR_ARG = 13,
  MPI_ERR_UNKNOWN = 14, MPI_ERR_TRUNCATE = 15, MPI_ERR_OTHER = 16, MPI_ERR_INTERN = 17,
  MPI_ERR_PENDING = 18, MPI_ERR_IN_STATUS = 19, MPI_ERR_ACCESS = 20, MPI_ERR_AMODE = 21,
  MPI_ERR_ASSERT = 22, MPI_ERR_BAD_FILE = 23, MPI_ERR_BASE = 24, MPI_ERR_CONVERSION = 25,
  MPI_ERR_DISP = 26, MPI_ERR_DUP_DATAREP = 27, MPI_ERR_FILE_EXISTS = 28,
  MPI_ERR_FILE_IN_USE = 29, MPI_ERR_FILE = 30, MPI_ERR_INFO_KEY = 31, MPI_ERR_INFO_NOKEY = 32,
  MPI_ERR_INFO_VALUE = 33, MPI_ERR_INFO = 34, MPI_ERR_IO = 35, MPI_ERR_KEYVAL = 36,
  MPI_ERR_LOCKTYPE = 37, MPI_ERR_NAME = 38, MPI_ERR_NO_MEM = 39, MPI_ERR_NOT_SAME = 40,
  MPI_ERR_NO_SPACE = 41, MPI_ERR_NO_SUCH_FILE = 42, MPI_ERR_PORT = 43, MPI_ERR_QUOTA = 44,
  MPI_ERR_READ_ONLY = 45, MPI_ERR_RMA_ATTACH = 46, MPI_ERR_RMA_CONFLICT = 47,
  MPI_ERR_RMA_RANGE = 48, MPI_ERR_RMA_SHARED = 49, MPI_ERR_RMA_SYNC = 50, MPI_ERR_SERVICE = 51,
  MPI_ERR_SIZE = 52, MPI_ERR_SPAWN = 53, MPI_ERR_UNSUPPORTED_DATAREP = 54,
  MPI_ERR_UNSUPPORTED_OPERATION = 55, MPI_ERR_WIN = 56, MPI_ERR_RMA_FLAVOR = 57,
  MPI_ERR_PROC_ABORTED = 58, MPI_ERR_VALUE_TOO_LARGE = 59, MPI_ERR_SESSION = 60,
  MPI_ERR_ERRHANDLER = 61, MPI_ERR_ABI = 62, MPI_ERR_LASTCODE = 0x3fff
};

#define MPI_BOTTOM ((void *)0)
#define MPI_IN_PLACE ((void *)1)
#define MPI_BUFFER_AUTOMATIC ((void *)2)
#define MPI_ARGV_NULL ((char **)0)
#define MPI_ARGVS_NULL ((char ***)0)
#define MPI_ERRCODES_IGNORE ((int *)0)
#define MPI_STATUS_IGNORE ((MPI_Status *)0)
#define MPI_STATUSES_IGNORE ((MPI_Status *)0)
#define MPI_UNWEIGHTED ((int *)10)
#define MPI_WEIGHTS_EMPTY ((int *)11)

#define MPI_MAX_DATAREP_STRING 128
#define MPI_MAX_ERROR_STRING 512
#define MPI_MAX_INFO_KEY 256
#define MPI_MAX_INFO_VAL 1024
#define MPI_MAX_LIBRARY_VERSION_STRING 8192
#define MPI_MAX_OBJECT_NAME 128
#define MPI_MAX_PORT_NAME 1024
#define MPI_MAX_PROCESSOR_NAME 256
#define MPI_MAX_STRINGTAG_LEN 1024
#define MPI_MAX_PSET_NAME_LEN 1024
#define MPI_BSEND_OVERHEAD 512

enum {
  MPI_MODE_APPEND = 1, MPI_MODE_CREATE = 2, MPI_MODE_DELETE_ON_CLOSE = 4, MPI_MODE_EXCL = 8,
  MPI_MODE_RDONLY = 16, MPI_MODE_RDWR = 32, MPI_MODE_SEQUENTIAL = 64,
  MPI_MODE_UNIQUE_OPEN = 128, MPI_MODE_WRONLY = 256, MPI_MODE_NOCHECK = 1024,
  MPI_MODE_NOPRECEDE = 2048, MPI_MODE_NOPUT = 4096, MPI_MODE_NOSTORE = 8192,
  MPI_MODE_NOSUCCEED = 16384
};

enum { MPI_ANY_SOURCE = -1, MPI_ANY_TAG = -2, MPI_PROC_NULL = -3, MPI_ROOT = -4,
       MPI_UNDEFINED = -32766 };

enum {
  MPI_THREAD_SINGLE = 0, MPI_THREAD_FUNNELED = 1024, MPI_THREAD_SERIALIZED = 2048,
  MPI_THREAD_MULTIPLE = 4096,
  MPI_ORDER_C = 12, MPI_ORDER_FORTRAN = 15,
  MPI_DISTRIBUTE_NONE = 16, MPI_DISTRIBUTE_BLOCK = 17, MPI_DISTRIBUTE_CYCLIC = 18,
  MPI_DISTRIBUTE_DFLT_DARG = 19,
  MPI_COMBINER_NAMED = 101, MPI_COMBINER_DUP = 102, MPI_COMBINER_CONTIGUOUS = 103,
  MPI_COMBINER_VECTOR = 104, MPI_COMBINER_HVECTOR = 105, MPI_COMBINER_INDEXED = 106,
  MPI_COMBINER_HINDEXED = 107, MPI_COMBINER_INDEXED_BLOCK = 108,
  MPI_COMBINER_HINDEXED_BLOCK = 109, MPI_COMBINER_STRUCT = 110, MPI_COMBINER_SUBARRAY = 111,
  MPI_COMBINER_DARRAY = 112, MPI_COMBINER_F90_REAL = 113, MPI_COMBINER_F90_COMPLEX = 114,
  MPI_COMBINER_F90_INTEGER = 115, MPI_COMBINER_RESIZED = 116,
  MPI_COMBINER_VALUE_INDEX = 117,
  MPI_TYPECLASS_INTEGER = 192, MPI_TYPECLASS_REAL = 193, MPI_TYPECLASS_COMPLEX = 194,
  MPI_IDENT = 201, MPI_CONGRUENT = 202, MPI_SIMILAR = 203, MPI_UNEQUAL = 204,
  MPI_CART = 211, MPI_GRAPH = 212, MPI_DIST_GRAPH = 213,
  MPI_COMM_TYPE_SHARED = 221, MPI_COMM_TYPE_HW_UNGUIDED = 222,
  MPI_COMM_TYPE_HW_GUIDED = 223, MPI_COMM_TYPE_RESOURCE_GUIDED = 224,
  MPI_LOCK_EXCLUSIVE = 301, MPI_LOCK_SHARED = 302,
  MPI_WIN_FLAVOR_CREATE = 311, MPI_WIN_FLAVOR_ALLOCATE = 312, MPI_WIN_FLAVOR_DYNAMIC = 313,
  MPI_WIN_FLAVOR_SHARED = 314, MPI_WIN_UNIFIED = 321, MPI_WIN_SEPARATE = 322,
  MPI_SEEK_CUR = 401, MPI_SEEK_END = 402, MPI_SEEK_SET = 403
};

#define MPI_DISPLACEMENT_CURRENT ((MPI_Offset)-1)

enum {
  MPI_KEYVAL_INVALID = 0,
  MPI_TAG_UB = 501, MPI_IO = 502, MPI_HOST = 503, MPI_WTIME_IS_GLOBAL = 504,
  MPI_APPNUM = 505, MPI_LASTUSEDCODE = 506, MPI_UNIVERSE_SIZE = 507,
  MPI_WIN_BASE = 601, MPI_WIN_DISP_UNIT = 602, MPI_WIN_SIZE = 603,
  MPI_WIN_CREATE_FLAVOR = 604, MPI_WIN_MODEL = 605
};

typedef void(MPI_User_function)(void *invec, void *inoutvec, int *len, MPI_Datatype *datatype);
typedef void(MPI_User_function_c)(void *invec, void *inoutvec, MPI_Count *len,
                                  MPI_Datatype *datatype);
typedef void(MPI_Comm_errhandler_function)(MPI_Comm *comm, int *error_code, ...);
typedef MPI_Comm_errhandler_function MPI_Comm_errhandler_fn;
typedef int(MPI_Comm_copy_attr_function)(MPI_Comm oldcomm, int comm_keyval, void *extra_state,
                                         void *attribute_val_in, void *attribute_val_out,
                                         int *flag);
typedef int(MPI_Comm_delete_attr_function)(MPI_Comm comm, int comm_keyval, void *attribute_val,
                                           void *extra_state);
#define MPI_COMM_NULL_COPY_FN ((MPI_Comm_copy_attr_function *)0x0)
#define MPI_COMM_DUP_FN ((MPI_Comm_copy_attr_function *)0x1)
#define MPI_COMM_NULL_DELETE_FN ((MPI_Comm_delete_attr_function *)0x0)

/* Environment (MPI-4.1 chapter 11), errors (chapter 9), info (chapter 10), ABI (5.0). */
int MPI_Init(int *argc, char ***argv);
int MPI_Init_thread(int *argc, char ***argv, int required, int *provided);
int MPI_Initialized(int *flag);
int MPI_Finalize(void);
int MPI_Finalized(int *flag);
int MPI_Query_thread(int *provided);
int MPI_Is_thread_main(int *flag);
int MPI_Abort(MPI_Comm comm, int errorcode);
double MPI_Wtime(void);
double MPI_Wtick(void);
int MPI_Get_processor_name(char *name, int *resultlen);
int MPI_Get_version(int *version, int *subversion);
int MPI_Get_library_version(char *version, int *resultlen);
int MPI_Abi_get_version(int *abi_major, int *abi_minor);
int MPI_Abi_get_info(MPI_Info *info);
int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr);
int MPI_Free_mem(void *base);
int MPI_Error_string(int errorcode, char *string, int *resultlen);
int MPI_Error_class(int errorcode, int *errorclass);
int MPI_Comm_create_errhandler(MPI_Comm_errhandler_function *fn, MPI_Errhandler *errhandler);
int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler);
int MPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *errhandler);
int MPI_Errhandler_free(MPI_Errhandler *errhandler);
int MPI_Comm_call_errhandler(MPI_Comm comm, int errorcode);
int MPI_Info_create(MPI_Info *info);
int MPI_Info_set(MPI_Info info, const char *key, const char *value);
int MPI_Info_get(MPI_Info info, const char *key, int valuelen, char *value, int *flag);
int MPI_Info_get_string(MPI_Info info, const char *key, int *buflen, char *value, int *flag);
int MPI_Info_get_valuelen(MPI_Info info, const char *key, int *valuelen, int *flag);
int MPI_Info_get_nkeys(MPI_Info info, int *nkeys);
int MPI_Info_get_nthkey(MPI_Info info, int n, char *key);
int MPI_Info_delete(MPI_Info info, const char *key);
int MPI_Info_dup(MPI_Info info, MPI_Info *newinfo);
int MPI_Info_free(MPI_Info *info);

/* Communicators and groups (chapter 7), Cartesian topologies (chapter 8). */
int MPI_Comm_size(MPI_Comm comm, int *size);
int MPI_Comm_rank(MPI_Comm comm, int *rank);
int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm);
int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm);
int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info,
                        MPI_Comm *newcomm);
int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm);
int MPI_Comm_free(MPI_Comm *comm);
int MPI_Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int *result);
int MPI_Comm_group(MPI_Comm comm, MPI_Group *group);
int MPI_Comm_set_name(MPI_Comm comm, const char *comm_name);
int MPI_Comm_get_name(MPI_Comm comm, char *comm_name, int *resultlen);
int MPI_Comm_get_attr(MPI_Comm comm, int comm_keyval, void *attribute_val, int *flag);
int MPI_Comm_create_keyval(MPI_Comm_copy_attr_function *comm_copy_attr_fn,
                           MPI_Comm_delete_attr_function *comm_delete_attr_fn, int *comm_keyval,
                           void *extra_state);
int MPI_Comm_free_keyval(int *comm_keyval);
int MPI_Comm_set_attr(MPI_Comm comm, int comm_keyval, void *attribute_val);
int MPI_Comm_delete_attr(MPI_Comm comm, int comm_keyval);
int MPI_Group_size(MPI_Group group, int *size);
int MPI_Group_rank(MPI_Group group, int *rank);
int MPI_Group_incl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup);
int MPI_Group_excl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup);
int MPI_Group_translate_ranks(MPI_Group group1, int n, const int ranks1[], MPI_Group group2,
                              int ranks2[]);
int MPI_Group_union(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup);
int MPI_Group_intersection(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup);
int MPI_Group_difference(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup);
int MPI_Group_compare(MPI_Group group1, MPI_Group group2, int *result);
int MPI_Group_free(MPI_Group *group);
int MPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup);
int MPI_Group_range_excl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup);
typedef MPI_Comm_copy_attr_function MPI_Copy_function;
typedef MPI_Comm_delete_attr_function MPI_Delete_function;
#define MPI_NULL_COPY_FN ((MPI_Copy_function *)0x0)
#define MPI_DUP_FN ((MPI_Copy_function *)0x1)
#define MPI_NULL_DELETE_FN ((MPI_Delete_function *)0x0)
int MPI_Keyval_create(MPI_Copy_function *copy_fn, MPI_Delete_function *delete_fn, int *keyval,
                      void *extra_state);
int MPI_Keyval_free(int *keyval);
int MPI_Attr_put(MPI_Comm comm, int keyval, void *attribute_val);
int MPI_Attr_get(MPI_Comm comm, int keyval, void *attribute_val, int *flag);
int MPI_Attr_delete(MPI_Comm comm, int keyval);
int MPI_Dims_create(int nnodes, int ndims, int dims[]);
int MPI_Cart_create(MPI_Comm comm_old, int ndims, const int dims[], const int periods[],
                    int reorder, MPI_Comm *comm_cart);
int MPI_Cart_coords(MPI_Comm comm, int rank, int maxdims, int coords[]);
int MPI_Cart_rank(MPI_Comm comm, const int coords[], int *rank);
int MPI_Cart_shift(MPI_Comm comm, int direction, int disp, int *rank_source, int *rank_dest);
int MPI_Cartdim_get(MPI_Comm comm, int *ndims);
int MPI_Cart_get(MPI_Comm comm, int maxdims, int dims[], int periods[], int coords[]);
int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm);
int MPI_Topo_test(MPI_Comm comm, int *status);
int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm);
int MPI_Comm_test_inter(MPI_Comm comm, int *flag);
int MPI_Comm_get_parent(MPI_Comm *parent);
int MPI_Comm_set_info(MPI_Comm comm, MPI_Info info);
int MPI_Comm_get_info(MPI_Comm comm, MPI_Info *info_used);
int MPI_Pcontrol(const int level, ...);

/* Handle conversion (MPI 5.0 ABI). */
int MPI_Comm_toint(MPI_Comm comm);
MPI_Comm MPI_Comm_fromint(int comm);
int MPI_Group_toint(MPI_Group group);
MPI_Group MPI_Group_fromint(int group);
int MPI_Request_toint(MPI_Request request);
MPI_Request MPI_Request_fromint(int request);
int MPI_Type_toint(MPI_Datatype datatype);
MPI_Datatype MPI_Type_fromint(int datatype);
int MPI_Op_toint(MPI_Op op);
MPI_Op MPI_Op_fromint(int op);
int MPI_Info_toint(MPI_Info info);
MPI_Info MPI_Info_fromint(int info);
int MPI_Errhandler_toint(MPI_Errhandler errhandler);
MPI_Errhandler MPI_Errhandler_fromint(int errhandler);

/* Point-to-point (chapter 3). */
int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
             MPI_Comm comm);
int MPI_Send_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
               MPI_Comm comm);
int MPI_Rsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
              MPI_Comm comm);
int MPI_Bsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
              MPI_Comm comm);
int MPI_Buffer_attach(void *buffer, int size);
int MPI_Buffer_detach(void *buffer_addr, int *size);
int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
             MPI_Status *status);
int MPI_Recv_c(void *buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,
               MPI_Comm comm, MPI_Status *status);
int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
              MPI_Comm comm, MPI_Request *request);
int MPI_Isend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                MPI_Comm comm, MPI_Request *request);
int MPI_Irsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
               MPI_Comm comm, MPI_Request *request);
int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
              MPI_Request *request);
int MPI_Irecv_c(void *buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,
                MPI_Comm comm, MPI_Request *request);
int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
                 int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype, int source,
                 int recvtag, MPI_Comm comm, MPI_Status *status);
int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest, int sendtag,
                         int source, int recvtag, MPI_Comm comm, MPI_Status *status);
int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status);
int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status);
int MPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count);
int MPI_Get_count_c(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count);
int MPI_Get_elements(const MPI_Status *status, MPI_Datatype datatype, int *count);
int MPI_Test_cancelled(const MPI_Status *status, int *flag);
int MPI_Status_set_elements(MPI_Status *status, MPI_Datatype datatype, int count);
int MPI_Status_set_elements_c(MPI_Status *status, MPI_Datatype datatype, MPI_Count count);
int MPI_Status_set_cancelled(MPI_Status *status, int flag);
int MPI_Status_set_source(MPI_Status *status, int source);
int MPI_Status_set_tag(MPI_Status *status, int tag);
int MPI_Status_set_error(MPI_Status *status, int error);
int MPI_Wait(MPI_Request *request, MPI_Status *status);
int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status);
int MPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[]);
int MPI_Testall(int count, MPI_Request array_of_requests[], int *flag,
                MPI_Status array_of_statuses[]);
int MPI_Waitany(int count, MPI_Request array_of_requests[], int *index, MPI_Status *status);
int MPI_Testany(int count, MPI_Request array_of_requests[], int *index, int *flag,
                MPI_Status *status);
int MPI_Waitsome(int incount, MPI_Request array_of_requests[], int *outcount,
                 int array_of_indices[], MPI_Status array_of_statuses[]);
int MPI_Testsome(int incount, MPI_Request array_of_requests[], int *outcount,
                 int array_of_indices[], MPI_Status array_of_statuses[]);
int MPI_Request_free(MPI_Request *request);
int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status);
int MPI_Cancel(MPI_Request *request);
int MPI_Send_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                  MPI_Comm comm, MPI_Request *request);
int MPI_Recv_init(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                  MPI_Comm comm, MPI_Request *request);
int MPI_Rsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                   MPI_Comm comm, MPI_Request *request);
int MPI_Ibsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
               MPI_Comm comm, MPI_Request *request);
int MPI_Get_elements_c(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count);
int MPI_Start(MPI_Request *request);
int MPI_Startall(int count, MPI_Request array_of_requests[]);

/* Collectives (chapter 6). */
int MPI_Barrier(MPI_Comm comm);
int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm);
int MPI_Bcast_c(void *buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm);
int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               int root, MPI_Comm comm);
int MPI_Reduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                 MPI_Op op, int root, MPI_Comm comm);
int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                  MPI_Op op, MPI_Comm comm);
int MPI_Allreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                    MPI_Op op, MPI_Comm comm);
int MPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
             MPI_Comm comm);
int MPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               MPI_Comm comm);
int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
               int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm);
int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                MPI_Comm comm);
int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm);
int MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                 MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                 int root, MPI_Comm comm);
int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                   MPI_Comm comm);
int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                  MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                  const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm);
int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request);
int MPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
               MPI_Request *request);
int MPI_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                MPI_Op op, int root, MPI_Comm comm, MPI_Request *request);
int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                   MPI_Op op, MPI_Comm comm, MPI_Request *request);
int MPI_Iscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
              MPI_Comm comm, MPI_Request *request);
int MPI_Iexscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                MPI_Comm comm, MPI_Request *request);
int MPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                              MPI_Request *request);
int MPI_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                MPI_Request *request);
int MPI_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                 MPI_Request *request);
int MPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request);
int MPI_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request);
int MPI_Barrier_init(MPI_Comm comm, MPI_Info info, MPI_Request *request);
int MPI_Bcast_init(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                   MPI_Info info, MPI_Request *request);
int MPI_Reduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                    MPI_Op op, int root, MPI_Comm comm, MPI_Info info, MPI_Request *request);
int MPI_Allreduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                       MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request);
int MPI_Scan_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                  MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request);
int MPI_Exscan_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                    MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request);
int MPI_Reduce_scatter_block_init(const void *sendbuf, void *recvbuf, int recvcount,
                                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                  MPI_Info info, MPI_Request *request);
int MPI_Gather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                    int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                    MPI_Info info, MPI_Request *request);
int MPI_Scatter_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                     int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                     MPI_Info info, MPI_Request *request);
int MPI_Allgather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                       void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                       MPI_Info info, MPI_Request *request);
int MPI_Alltoall_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                      void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                      MPI_Info info, MPI_Request *request);
int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
int MPI_Alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                  const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                  const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm);
int MPI_Ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request);
int MPI_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                 MPI_Comm comm, MPI_Request *request);
int MPI_Iscatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                  MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                  int root, MPI_Comm comm, MPI_Request *request);
int MPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                    const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                    MPI_Comm comm, MPI_Request *request);
int MPI_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                   MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                   const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                   MPI_Request *request);
int MPI_Op_create(MPI_User_function *user_fn, int commute, MPI_Op *op);
int MPI_Op_free(MPI_Op *op);
int MPI_Op_commutative(MPI_Op op, int *commute);

/* Datatypes (chapter 5). */
int MPI_Type_size(MPI_Datatype datatype, int *size);
int MPI_Type_size_c(MPI_Datatype datatype, MPI_Count *size);
int MPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent);
int MPI_Type_get_true_extent(MPI_Datatype datatype, MPI_Aint *true_lb, MPI_Aint *true_extent);
int MPI_Type_contiguous(int count, MPI_Datatype oldtype, MPI_Datatype *newtype);
int MPI_Type_dup(MPI_Datatype oldtype, MPI_Datatype *newtype);
int MPI_Type_commit(MPI_Datatype *datatype);
int MPI_Type_free(MPI_Datatype *datatype);
int MPI_Type_get_name(MPI_Datatype datatype, char *type_name, int *resultlen);
int MPI_Type_set_name(MPI_Datatype datatype, const char *type_name);
int MPI_Get_address(const void *location, MPI_Aint *address);
int MPI_Pack(const void *inbuf, int incount, MPI_Datatype datatype, void *outbuf, int outsize,
             int *position, MPI_Comm comm);
int MPI_Unpack(const void *inbuf, int insize, int *position, void *outbuf, int outcount,
               MPI_Datatype datatype, MPI_Comm comm);
int MPI_Pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int *size);
int MPI_Type_vector(int count, int blocklength, int stride, MPI_Datatype oldtype,
                    MPI_Datatype *newtype);
int MPI_Type_create_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype,
                            MPI_Datatype *newtype);
int MPI_Type_indexed(int count, const int array_of_blocklengths[],
                     const int array_of_displacements[], MPI_Datatype oldtype,
                     MPI_Datatype *newtype);
int MPI_Type_create_hindexed(int count, const int array_of_blocklengths[],
                             const MPI_Aint array_of_displacements[], MPI_Datatype oldtype,
                             MPI_Datatype *newtype);
int MPI_Type_create_indexed_block(int count, int blocklength, const int array_of_displacements[],
                                  MPI_Datatype oldtype, MPI_Datatype *newtype);
int MPI_Type_create_hindexed_block(int count, int blocklength,
                                   const MPI_Aint array_of_displacements[], MPI_Datatype oldtype,
                                   MPI_Datatype *newtype);
int MPI_Type_create_struct(int count, const int array_of_blocklengths[],
                           const MPI_Aint array_of_displacements[],
                           const MPI_Datatype array_of_types[], MPI_Datatype *newtype);
int MPI_Type_create_resized(MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent,
                            MPI_Datatype *newtype);
int MPI_Type_create_subarray(int ndims, const int array_of_sizes[], const int array_of_subsizes[],
                             const int array_of_starts[], int order, MPI_Datatype oldtype,
                             MPI_Datatype *newtype);
int MPI_Type_get_extent_c(MPI_Datatype datatype, MPI_Count *lb, MPI_Count *extent);
int MPI_Type_get_true_extent_c(MPI_Datatype datatype, MPI_Count *true_lb,
                               MPI_Count *true_extent);
MPI_Aint MPI_Aint_add(MPI_Aint base, MPI_Aint disp);
MPI_Aint MPI_Aint_diff(MPI_Aint addr1, MPI_Aint addr2);

/* Large-count forms (MPI-4.1 §2.5.8). */
int MPI_Allgather_c(const void *send, MPI_Count scount, MPI_Datatype sdt, void *recv, MPI_Count rcount, MPI_Datatype rdt, MPI_Comm comm);
int MPI_Alltoall_c(const void *send, MPI_Count scount, MPI_Datatype sdt, void *recv, MPI_Count rcount, MPI_Datatype rdt, MPI_Comm comm);
int MPI_Gather_c(const void *send, MPI_Count scount, MPI_Datatype sdt, void *recv, MPI_Count rcount, MPI_Datatype rdt, int root, MPI_Comm comm);
int MPI_Scatter_c(const void *send, MPI_Count scount, MPI_Datatype sdt, void *recv, MPI_Count rcount, MPI_Datatype rdt, int root, MPI_Comm comm);
int MPI_Scan_c(const void *send, void *recv, MPI_Count count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int MPI_Exscan_c(const void *send, void *recv, MPI_Count count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int MPI_Reduce_scatter_block_c(const void *send, void *recv, MPI_Count count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int MPI_Ibcast_c(void *buf, MPI_Count count, MPI_Datatype dt, int root, MPI_Comm comm, MPI_Request *req);
int MPI_Ireduce_c(const void *send, void *recv, MPI_Count count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm, MPI_Request *req);
int MPI_Iallreduce_c(const void *send, void *recv, MPI_Count count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm, MPI_Request *req);
int MPI_Iscan_c(const void *send, void *recv, MPI_Count count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm, MPI_Request *req);
int MPI_Iexscan_c(const void *send, void *recv, MPI_Count count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm, MPI_Request *req);
int MPI_Ireduce_scatter_block_c(const void *send, void *recv, MPI_Count count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm, MPI_Request *req);
int MPI_Iallgather_c(const void *send, MPI_Count scount, MPI_Datatype sdt, void *recv, MPI_Count rcount, MPI_Datatype rdt, MPI_Comm comm, MPI_Request *req);
int MPI_Ialltoall_c(const void *send, MPI_Count scount, MPI_Datatype sdt, void *recv, MPI_Count rcount, MPI_Datatype rdt, MPI_Comm comm, MPI_Request *req);
int MPI_Igather_c(const void *send, MPI_Count scount, MPI_Datatype sdt, void *recv, MPI_Count rcount, MPI_Datatype rdt, int root, MPI_Comm comm, MPI_Request *req);
int MPI_Iscatter_c(const void *send, MPI_Count scount, MPI_Datatype sdt, void *recv, MPI_Count rcount, MPI_Datatype rdt, int root, MPI_Comm comm, MPI_Request *req);
int MPI_Rsend_c(const void *buf, MPI_Count count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm);
int MPI_Bsend_c(const void *buf, MPI_Count count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm);
int MPI_Irsend_c(const void *buf, MPI_Count count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request *req);
int MPI_Ibsend_c(const void *buf, MPI_Count count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request *req);
int MPI_Send_init_c(const void *buf, MPI_Count count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request *req);
int MPI_Recv_init_c(void *buf, MPI_Count count, MPI_Datatype dt, int source, int tag, MPI_Comm comm, MPI_Request *req);
int MPI_Sendrecv_c(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, int dest, int stag, void *rbuf, MPI_Count rcount, MPI_Datatype rdt, int source, int rtag, MPI_Comm comm, MPI_Status *status);
int MPI_Sendrecv_replace_c(void *buf, MPI_Count count, MPI_Datatype dt, int dest, int stag, int source, int rtag, MPI_Comm comm, MPI_Status *status);
int MPI_Type_contiguous_c(MPI_Count count, MPI_Datatype old, MPI_Datatype *newtype);
int MPI_Type_vector_c(MPI_Count count, MPI_Count blocklength, MPI_Count stride, MPI_Datatype old, MPI_Datatype *newtype);

#ifdef __cplusplus
}
#endif
#endif /* WEFT_MPI_H */

/* Compiled by build.rs (syntax only) when weft-transport is built with the ucx feature: the
 * layout and constants src/ucx/ffi.rs declares must be those of the installed ucp.h. */
#include <stddef.h>
#include <ucp/api/ucp.h>

#define SAME(expr, value) _Static_assert((expr) == (value), #expr " is not " #value)

SAME(UCP_API_MAJOR, 1);
SAME(UCP_API_MINOR >= 13, 1);

SAME(sizeof(ucp_params_t) >= 16, 1);
SAME(offsetof(ucp_params_t, field_mask), 0);
SAME(offsetof(ucp_params_t, features), 8);
SAME(sizeof(ucp_params_t) <= 80, 1);

SAME(offsetof(ucp_worker_params_t, thread_mode), 8);
SAME(sizeof(ucp_worker_params_t) <= 200, 1);

SAME(offsetof(ucp_ep_params_t, address), 8);
SAME(offsetof(ucp_ep_params_t, err_mode), 16);
SAME(offsetof(ucp_ep_params_t, err_handler), 24);
SAME(offsetof(ucp_ep_params_t, user_data), 40);
SAME(offsetof(ucp_ep_params_t, flags), 48);
SAME(sizeof(ucp_ep_params_t) <= 104, 1);

SAME(offsetof(ucp_request_param_t, op_attr_mask), 0);
SAME(offsetof(ucp_request_param_t, flags), 4);
SAME(offsetof(ucp_request_param_t, request), 8);
SAME(offsetof(ucp_request_param_t, cb), 16);
SAME(offsetof(ucp_request_param_t, datatype), 24);
SAME(offsetof(ucp_request_param_t, user_data), 32);
SAME(offsetof(ucp_request_param_t, reply_buffer), 40);
SAME(offsetof(ucp_request_param_t, memory_type), 48);
SAME(offsetof(ucp_request_param_t, recv_info), 56);
SAME(offsetof(ucp_request_param_t, memh), 64);
SAME(sizeof(ucp_request_param_t), 72);

SAME(offsetof(ucp_am_handler_param_t, id), 8);
SAME(offsetof(ucp_am_handler_param_t, flags), 12);
SAME(offsetof(ucp_am_handler_param_t, cb), 16);
SAME(offsetof(ucp_am_handler_param_t, arg), 24);
SAME(sizeof(ucp_am_handler_param_t), 32);

SAME(offsetof(ucp_am_recv_param_t, recv_attr), 0);
SAME(offsetof(ucp_am_recv_param_t, reply_ep), 8);
SAME(sizeof(ucp_am_recv_param_t), 16);
SAME(offsetof(ucp_tag_recv_info_t, sender_tag), 0);
SAME(offsetof(ucp_tag_recv_info_t, length), 8);
SAME(sizeof(ucp_tag_recv_info_t), 16);

SAME(offsetof(ucp_mem_map_params_t, address), 8);
SAME(offsetof(ucp_mem_map_params_t, length), 16);
SAME(offsetof(ucp_mem_map_params_t, flags), 24);
SAME(offsetof(ucp_mem_map_params_t, prot), 28);
SAME(offsetof(ucp_mem_map_params_t, memory_type), 32);
SAME(sizeof(ucp_mem_map_params_t), 40);

SAME(UCP_PARAM_FIELD_FEATURES, 1 << 0);
SAME(UCP_FEATURE_RMA, 1 << 1);
SAME(UCP_FEATURE_AMO32, 1 << 2);
SAME(UCP_FEATURE_AMO64, 1 << 3);
SAME(UCP_FEATURE_AM, 1 << 6);
SAME(UCP_WORKER_PARAM_FIELD_THREAD_MODE, 1 << 0);
SAME(UCS_THREAD_MODE_SINGLE, 0);
SAME(UCP_EP_PARAM_FIELD_REMOTE_ADDRESS, 1 << 0);
SAME(UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE, 1 << 1);
SAME(UCP_EP_PARAM_FIELD_ERR_HANDLER, 1 << 2);
SAME(UCP_ERR_HANDLING_MODE_PEER, 1);
SAME(UCP_EP_CLOSE_FLAG_FORCE, 1 << 0);
SAME(UCP_AM_HANDLER_PARAM_FIELD_ID, 1 << 0);
SAME(UCP_AM_HANDLER_PARAM_FIELD_FLAGS, 1 << 1);
SAME(UCP_AM_HANDLER_PARAM_FIELD_CB, 1 << 2);
SAME(UCP_AM_HANDLER_PARAM_FIELD_ARG, 1 << 3);
SAME(UCP_AM_FLAG_WHOLE_MSG, 1 << 0);
SAME(UCP_AM_SEND_FLAG_EAGER, 1 << 1);
SAME(UCP_AM_SEND_FLAG_RNDV, 1 << 2);
SAME(UCP_AM_RECV_ATTR_FLAG_RNDV, 1 << 17);
SAME(UCP_OP_ATTR_FIELD_CALLBACK, 1 << 1);
SAME(UCP_OP_ATTR_FIELD_USER_DATA, 1 << 2);
SAME(UCP_OP_ATTR_FIELD_DATATYPE, 1 << 3);
SAME(UCP_OP_ATTR_FIELD_FLAGS, 1 << 4);
SAME(UCP_OP_ATTR_FIELD_REPLY_BUFFER, 1 << 5);
SAME(UCP_OP_ATTR_FLAG_NO_IMM_CMPL, 1 << 16);
SAME(UCP_FEATURE_TAG, 1 << 0);
SAME(UCP_MEM_MAP_PARAM_FIELD_ADDRESS, 1 << 0);
SAME(UCP_MEM_MAP_PARAM_FIELD_LENGTH, 1 << 1);
SAME(UCP_ATOMIC_OP_ADD, 0);
SAME(UCP_ATOMIC_OP_SWAP, 1);
SAME(UCP_ATOMIC_OP_CSWAP, 2);
SAME(UCP_ATOMIC_OP_AND, 3);
SAME(UCP_ATOMIC_OP_OR, 4);
SAME(UCP_ATOMIC_OP_XOR, 5);
SAME(UCS_ERR_MESSAGE_TRUNCATED, -9);
SAME(UCS_ERR_CANCELED, -16);
SAME(UCS_ERR_CONNECTION_RESET, -25);
SAME(UCS_ERR_FIRST_LINK_FAILURE, -40);
SAME(UCS_ERR_LAST_ENDPOINT_FAILURE, -89);
SAME(UCS_ERR_LAST, -100);
SAME(UCS_ERR_UNREACHABLE, -6);
SAME(UCS_ERR_NOT_CONNECTED, -24);
SAME(UCS_ERR_TIMED_OUT, -20);
SAME(ucp_dt_make_contig(1), 8);

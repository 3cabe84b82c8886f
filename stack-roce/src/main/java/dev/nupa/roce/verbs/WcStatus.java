package dev.nupa.roce.verbs;

/** Work completion statuses, numbered like libibverbs' {@code enum ibv_wc_status}; ints so polling allocates nothing. */
public final class WcStatus {
    public static final int SUCCESS = 0;
    public static final int LOC_LEN_ERR = 1;
    public static final int LOC_QP_OP_ERR = 2;
    public static final int LOC_PROT_ERR = 4;
    public static final int WR_FLUSH_ERR = 5;
    public static final int MW_BIND_ERR = 6;
    public static final int BAD_RESP_ERR = 7;
    public static final int LOC_ACCESS_ERR = 8;
    public static final int REM_INV_REQ_ERR = 9;
    public static final int REM_ACCESS_ERR = 10;
    public static final int REM_OP_ERR = 11;
    public static final int RETRY_EXC_ERR = 12;
    public static final int RNR_RETRY_EXC_ERR = 13;
    public static final int GENERAL_ERR = 21;

    private WcStatus() {
    }

    /** The libibverbs name, as {@code ibv_wc_status_str} would print the enum constant. */
    public static String name(int status) {
        return switch (status) {
            case SUCCESS -> "IBV_WC_SUCCESS";
            case LOC_LEN_ERR -> "IBV_WC_LOC_LEN_ERR";
            case LOC_QP_OP_ERR -> "IBV_WC_LOC_QP_OP_ERR";
            case LOC_PROT_ERR -> "IBV_WC_LOC_PROT_ERR";
            case WR_FLUSH_ERR -> "IBV_WC_WR_FLUSH_ERR";
            case MW_BIND_ERR -> "IBV_WC_MW_BIND_ERR";
            case BAD_RESP_ERR -> "IBV_WC_BAD_RESP_ERR";
            case LOC_ACCESS_ERR -> "IBV_WC_LOC_ACCESS_ERR";
            case REM_INV_REQ_ERR -> "IBV_WC_REM_INV_REQ_ERR";
            case REM_ACCESS_ERR -> "IBV_WC_REM_ACCESS_ERR";
            case REM_OP_ERR -> "IBV_WC_REM_OP_ERR";
            case RETRY_EXC_ERR -> "IBV_WC_RETRY_EXC_ERR";
            case RNR_RETRY_EXC_ERR -> "IBV_WC_RNR_RETRY_EXC_ERR";
            case GENERAL_ERR -> "IBV_WC_GENERAL_ERR";
            default -> "IBV_WC_STATUS_" + status;
        };
    }
}

package dev.nupa.roce;

import dev.nupa.roce.verbs.QpAttrMask;
import dev.nupa.roce.verbs.QpState;
import dev.nupa.roce.verbs.QpType;
import dev.nupa.roce.verbs.RdmaException;

import static dev.nupa.roce.verbs.QpAttrMask.*;

/**
 * Which QP state transitions {@code modify} allows and which attributes each requires or permits
 * (IBA 10.3.1 and table 91 of the QP attributes; the same table as Linux's {@code ib_modify_qp_is_ok}).
 * Moves to RESET and to ERR are allowed from every state and take no attributes.
 */
final class QpTransitions {
    private QpTransitions() {
    }

    /** Checks a modify of {@code type} from {@code from} to {@code to} with {@code mask}; throws naming what is wrong. */
    static void check(QpType type, QpState from, QpState to, int mask) {
        if (to == QpState.RESET || to == QpState.ERR) {
            return;
        }
        int required;
        int optional;
        boolean rc = type == QpType.RC;
        switch (from.name() + ">" + to.name()) {
            case "RESET>INIT" -> {
                required = PKEY_INDEX | PORT | (rc ? ACCESS_FLAGS : QKEY);
                optional = 0;
            }
            case "INIT>INIT" -> {
                required = 0;
                optional = PKEY_INDEX | PORT | (rc ? ACCESS_FLAGS : QKEY);
            }
            case "INIT>RTR" -> {
                required = rc ? AV | PATH_MTU | DEST_QPN | RQ_PSN | MAX_DEST_RD_ATOMIC | MIN_RNR_TIMER : 0;
                optional = rc ? ALT_PATH | ACCESS_FLAGS | PKEY_INDEX : PKEY_INDEX | QKEY;
            }
            case "RTR>RTS" -> {
                required = SQ_PSN | (rc ? TIMEOUT | RETRY_CNT | RNR_RETRY | MAX_QP_RD_ATOMIC : 0);
                optional = CUR_STATE | (rc ? ALT_PATH | ACCESS_FLAGS | MIN_RNR_TIMER | PATH_MIG_STATE : QKEY);
            }
            case "RTS>RTS", "SQD>RTS" -> {
                required = 0;
                optional = CUR_STATE | (rc ? ACCESS_FLAGS | ALT_PATH | PATH_MIG_STATE | MIN_RNR_TIMER : QKEY);
            }
            case "SQE>RTS" -> {
                if (rc) {
                    throw illegal(type, from, to, "an RC QP never enters SQE");
                }
                required = 0;
                optional = CUR_STATE | QKEY;
            }
            case "RTS>SQD" -> {
                required = 0;
                optional = EN_SQD_ASYNC_NOTIFY;
            }
            case "SQD>SQD" -> {
                required = 0;
                optional = rc ? AV | TIMEOUT | RETRY_CNT | RNR_RETRY | MAX_QP_RD_ATOMIC | MAX_DEST_RD_ATOMIC | ALT_PATH
                        | ACCESS_FLAGS | PKEY_INDEX | MIN_RNR_TIMER | PATH_MIG_STATE : PKEY_INDEX | QKEY;
            }
            default -> throw illegal(type, from, to, "IBA 10.3.1 allows RESET>INIT>RTR>RTS, RTS<>SQD, and any state to RESET or ERR");
        }
        int given = mask & ~STATE;
        int missing = required & ~given;
        if (missing != 0) {
            throw new RdmaException("modify of " + type + " QP from " + from + " to " + to + " is missing required attribute(s) "
                    + describe(missing) + "; set them in QpAttr and in the mask");
        }
        int extra = given & ~(required | optional);
        if (extra != 0) {
            throw new RdmaException("modify of " + type + " QP from " + from + " to " + to + " may not set attribute(s) "
                    + describe(extra) + "; allowed: " + describe(required | optional));
        }
    }

    private static RdmaException illegal(QpType type, QpState from, QpState to, String why) {
        return new RdmaException("illegal QP state transition " + from + " -> " + to + " for a " + type + " QP: " + why);
    }
}

package dev.nupa.node.cli;

import dev.nupa.ip.DscpLevels;
import dev.nupa.l2.Link;
import dev.nupa.l2.RingPolicy;
import dev.nupa.l2.ServiceLevels;
import dev.nupa.node.NupaNode;

/** `nupa node --service-levels / --dscp-levels / --ring-policy`: the node's service levels (docs/link-layer.md 6). */
final class QosOptions {
    private QosOptions() {
    }

    /** Applies what was given (null: the default) to the node's primary loop; throws IllegalArgumentException naming a bad value. */
    static void apply(NupaNode node, String serviceLevels, String dscpLevels, String ringPolicy) {
        Link link = node.link();
        ServiceLevels levels = serviceLevels == null ? null : ServiceLevels.parse(serviceLevels, link.rings());
        DscpLevels dscp = dscpLevels == null ? null : DscpLevels.parse(dscpLevels);
        RingPolicy policy = ringPolicy == null ? null : RingPolicy.parse(ringPolicy, link.rings());
        if (levels == null && dscp == null && policy == null) {
            return;
        }
        link.call(() -> { // on the loop: the IP layer's settings are its own thread's
            if (levels != null) {
                link.setServiceLevels(levels);
            }
            if (dscp != null) {
                node.ip().setDscpLevels(dscp);
            }
            if (policy != null) {
                link.setRingPolicy(policy);
            }
            return null;
        });
    }
}

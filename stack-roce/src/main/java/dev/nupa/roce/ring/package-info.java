/**
 * Work rings (docs/work-rings.md): one work-request format for host and device code. Posters write fixed-size WQEs
 * into a submission ring in fabric memory and take completions from a completion ring beside it; a proxy executes
 * the WQEs on an RC queue pair. {@link dev.nupa.roce.ring.WorkRing} is the poster's side,
 * {@link dev.nupa.roce.ring.WorkRingProxy} the proxy's, and {@link dev.nupa.roce.ring.WorkRingLayout} the bytes both
 * agree on with {@code native/include/nupa_wqe.h}.
 */
package dev.nupa.roce.ring;

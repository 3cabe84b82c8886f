/** The link layer over the fabric: link frames, dispatch, the datapath loop, the neighbor directory, capture. */
module dev.nupa.l2 {
    requires transitive dev.nupa.device;

    exports dev.nupa.l2;
}

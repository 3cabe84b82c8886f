/** The fabric device: the shared-memory layout, rings, doorbells and windows, on a file or a guest's PCI BAR. */
module dev.nupa.device {
    exports dev.nupa.device;
}

package dev.nupa.ip;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

/** A UDP receiver that keeps copies of what it got, and the ICMP errors. */
final class RecordingReceiver implements UdpReceiver {
    record Got(int source, int sourcePort, int destination, byte[] data) {
    }

    record Error(int type, int code, int destination, int port) {
    }

    final List<Got> got = new ArrayList<>();
    final List<Error> errors = new ArrayList<>();

    @Override
    public void onDatagram(int sourceAddress, int sourcePort, int destinationAddress, MemorySegment data, long offset,
                           int length) {
        got.add(new Got(sourceAddress, sourcePort, destinationAddress,
                data.asSlice(offset, length).toArray(ValueLayout.JAVA_BYTE)));
    }

    @Override
    public void onIcmpError(int type, int code, int destination, int port) {
        errors.add(new Error(type, code, destination, port));
    }
}

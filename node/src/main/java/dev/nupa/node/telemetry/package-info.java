/**
 * A node's layers as OpenTelemetry: TCP and RDMA spans and histograms recorded on the loop, tracing setup, the
 * metric file exporter.
 */
package dev.nupa.node.telemetry;

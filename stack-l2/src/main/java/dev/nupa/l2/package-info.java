/** Link layer over the fabric: frames, protocol dispatch, neighbors, capture. Not built yet (issue 3). */
package dev.nupa.l2;

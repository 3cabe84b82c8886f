/** InfiniBand transport, queue pairs and verbs over the fabric. Not built yet (issue 5). */
package dev.nupa.roce;

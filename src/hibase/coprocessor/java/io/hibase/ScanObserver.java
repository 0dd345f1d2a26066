// hibase's scan-time coprocessor (issue 39): a scan carrying the attribute "hibase.scan" (a
// JSON work description, PushedScan) has its region scanner wrapped, so the region filters,
// projects, partially aggregates or keeps a top-k of its own rows and returns only those.
// Scans without the attribute are left alone. Index upkeep stays in IndexObserver.
package io.hibase;

import java.io.IOException;
import java.util.Optional;

import org.apache.hadoop.hbase.DoNotRetryIOException;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.coprocessor.ObserverContext;
import org.apache.hadoop.hbase.coprocessor.RegionCoprocessor;
import org.apache.hadoop.hbase.coprocessor.RegionCoprocessorEnvironment;
import org.apache.hadoop.hbase.coprocessor.RegionObserver;
import org.apache.hadoop.hbase.regionserver.RegionScanner;

public class ScanObserver implements RegionCoprocessor, RegionObserver {
  /** The scan attribute holding the work (PushedScan.parse's JSON). */
  public static final String ATTRIBUTE = "hibase.scan";

  @Override
  public Optional<RegionObserver> getRegionObserver() { return Optional.of(this); }

  @Override
  public RegionScanner postScannerOpen(ObserverContext<RegionCoprocessorEnvironment> c,
                                       Scan scan, RegionScanner s) throws IOException {
    byte[] work = scan.getAttribute(ATTRIBUTE);
    if (work == null) return s;
    try {
      return new PushedScanner(s, PushedScan.parse(work));
    } catch (RuntimeException e) {
      // a malformed description fails this scan only, never the region server
      throw new DoNotRetryIOException("hibase pushed-down scan refused: " + e, e);
    }
  }
}

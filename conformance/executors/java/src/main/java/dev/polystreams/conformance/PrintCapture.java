package dev.polystreams.conformance;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * System.out, per thread: the lines KStream.print(Printed.toSysOut()) writes
 * while a case runs on its thread (TopologyTestDriver processes on the
 * caller's thread), so cases running in parallel keep their own lines.
 * Printed.toSysOut() takes System.out when the topology is built, after
 * {@link #install()}.
 */
final class PrintCapture extends OutputStream {
  private static final ThreadLocal<ByteArrayOutputStream> BUFFER = new ThreadLocal<>();
  private static final PrintStream STDOUT = System.out;

  private PrintCapture() {}

  static void install() {
    System.setOut(new PrintStream(new PrintCapture(), true, StandardCharsets.UTF_8));
  }

  /** Starts capturing this thread's output. */
  static void begin() {
    BUFFER.set(new ByteArrayOutputStream());
  }

  /** Ends capturing this thread's output and answers its lines. */
  static List<String> end() {
    ByteArrayOutputStream b = BUFFER.get();
    BUFFER.remove();
    List<String> lines = new ArrayList<>();
    if (b == null) {
      return lines;
    }
    String text = b.toString(StandardCharsets.UTF_8);
    for (String line : text.split("\n", -1)) {
      lines.add(line);
    }
    if (!lines.isEmpty() && lines.get(lines.size() - 1).isEmpty()) {
      lines.remove(lines.size() - 1);
    }
    return lines;
  }

  @Override
  public void write(int b) {
    ByteArrayOutputStream buf = BUFFER.get();
    if (buf != null) {
      buf.write(b);
    } else {
      STDOUT.write(b);
    }
  }

  @Override
  public void write(byte[] b, int off, int len) {
    ByteArrayOutputStream buf = BUFFER.get();
    if (buf != null) {
      buf.write(b, off, len);
    } else {
      STDOUT.write(b, off, len);
    }
  }

  @Override
  public void flush() {
    if (BUFFER.get() == null) {
      STDOUT.flush();
    }
  }
}

// JUnit tests of the full-text tokenizer (Tokens): the rule hibase/index/text.py states, on
// the cases where Java's and Python's character classes or case mappings could part (the
// golden vectors, CodecVectors "tokens" lines, check the bytes over many more texts).
package io.hibase;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import org.junit.jupiter.api.Test;

class TokensTest {
  @Test
  void wordsAreLetterOrDigitRunsLowerCased() {
    assertEquals(Arrays.asList("the", "quick", "fox", "snake", "case", "x2y"),
        Tokens.tokenize("The QUICK, fox! snake_case x2y"));
  }

  @Test
  void numbersThatAreNoDecimalDigitsSplitWords() {
    // ² (No), ½ (No), Ⅻ (Nl): str.isalnum takes them, the rule does not
    assertEquals(Arrays.asList("x", "y", "a", "b"), Tokens.tokenize("x²y ½ Ⅻ a①b"));
  }

  @Test
  void fullCaseMappingAndFinalSigma() {
    assertEquals(Arrays.asList("i\u0307stanbul", "οδυσσευς", "σας"),
        Tokens.tokenize("İstanbul ΟΔΥΣΣΕΥΣ ΣΑΣ"));
  }

  @Test
  void longRunsAreNoTokens() {
    String a64 = "a".repeat(64);
    assertEquals(Arrays.asList(a64), Tokens.tokenize(a64 + " " + "b".repeat(65)));
  }

  @Test
  void malformedTextHasNoEntries() {
    HibaseCodec.Type t = HibaseCodec.Type.parse("string");
    assertTrue(Tokens.keys(new byte[] {0, 1}, t, new byte[] {(byte) 0xff, 'o', 'k'}).isEmpty());
    assertEquals(2, Tokens.keys(new byte[] {0, 1}, t,
        "fox FOX dog".getBytes(StandardCharsets.UTF_8)).size());
  }
}

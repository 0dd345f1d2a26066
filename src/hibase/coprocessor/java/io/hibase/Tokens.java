// Full-text indexes (IndexSpec kind "text", hibase/index/text.py): the tokenizer and a row's
// token entries, computed exactly as Python computes them (golden vectors: "tokens" lines of
// tests/golden/codec_vectors.txt, CodecVectors; TokensTest).
package io.hibase;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

final class Tokens {
  private Tokens() {}

  /** text.TOKEN_MAX: a longer run (in code points, lower-cased) is no token. */
  static final int TOKEN_MAX = 64;

  /** text.tokenize: maximal runs of code points of category L* or Nd
   *  (Character.isLetterOrDigit; Python's c.isalpha() or c.isdecimal()), each lower-cased
   *  whole (String.toLowerCase(Locale.ROOT), Python's str.lower: full mapping, final sigma),
   *  kept when at most TOKEN_MAX code points long; in order, repeats kept. */
  static List<String> tokenize(String text) {
    List<String> out = new ArrayList<>();
    int start = -1;
    int i = 0;
    int n = text.length();
    while (i < n) {
      int cp = text.codePointAt(i);
      boolean word = Character.isLetterOrDigit(cp);
      if (word && start < 0) {
        start = i;
      } else if (!word && start >= 0) {
        emit(text.substring(start, i), out);
        start = -1;
      }
      i += Character.charCount(cp);
    }
    if (start >= 0) emit(text.substring(start), out);
    return out;
  }

  private static void emit(String run, List<String> out) {
    String low = run.toLowerCase(Locale.ROOT);
    if (low.codePointCount(0, low.length()) <= TOKEN_MAX) out.add(low);
  }

  /** text.token_keys: the value keys (alias | token's key) of a row's entries, from its
   *  indexed cell's raw value (null: absent); none when it is not valid UTF-8 (another
   *  writer's bytes: NULL, as hibase reads it). */
  static Set<ByteBuffer> keys(byte[] alias, HibaseCodec.Type type, byte[] raw) {
    Set<ByteBuffer> out = new HashSet<>();
    if (raw == null) return out;
    String text;
    try {
      HibaseCodec.cellKey(type, raw);  // refuses what Python's decode_cell refuses
      text = StandardCharsets.UTF_8.newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(raw)).toString();
    } catch (HibaseCodec.Malformed | CharacterCodingException e) {
      return out;
    }
    for (String tok : tokenize(text)) {
      try {
        byte[] k = HibaseCodec.cellKey(type, tok.getBytes(StandardCharsets.UTF_8));
        out.add(ByteBuffer.wrap(RowState.cat(alias, k)));
      } catch (HibaseCodec.Malformed never) {
        // a part of valid text is valid text
      }
    }
    return out;
  }

  /** The token value keys of a row's entries in text index s, from its newest values. */
  static Set<ByteBuffer> keys(Specs.Spec s, RowState.State st) {
    return keys(s.alias, s.types[0], st == null ? null : st.latest(s.columns[0]));
  }
}

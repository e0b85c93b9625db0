package io.rsm.kafka;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small JSON reader: objects (as maps), arrays (lists), strings, integers (longs), booleans, null; what
 * {@link ReadCommittedIT} needs to read the lines of {@code rsm read --json}.
 */
final class JsonReader {
    final String s;
    int i;

    JsonReader(String s) {
        this.s = s;
    }

    Object document() {
        Object v = value();
        space();
        if (i != s.length()) {
            throw error("trailing characters");
        }
        return v;
    }

    IllegalArgumentException error(String what) {
        return new IllegalArgumentException("JSON: " + what + " at " + i);
    }

    void space() {
        while (i < s.length() && " \t\r\n".indexOf(s.charAt(i)) >= 0) {
            i++;
        }
    }

    void expect(char c) {
        space();
        if (i >= s.length() || s.charAt(i) != c) {
            throw error("expected '" + c + "'");
        }
        i++;
    }

    Object value() {
        space();
        if (i >= s.length()) {
            throw error("unexpected end");
        }
        char c = s.charAt(i);
        if (c == '{') {
            i++;
            Map<String, Object> m = new LinkedHashMap<>();
            space();
            if (s.charAt(i) == '}') {
                i++;
                return m;
            }
            while (true) {
                space();
                String k = string();
                expect(':');
                if (m.put(k, value()) != null) {
                    throw error("duplicate key " + k);
                }
                space();
                char d = s.charAt(i++);
                if (d == '}') {
                    return m;
                }
                if (d != ',') {
                    throw error("expected ',' or '}'");
                }
            }
        } else if (c == '[') {
            i++;
            List<Object> l = new ArrayList<>();
            space();
            if (s.charAt(i) == ']') {
                i++;
                return l;
            }
            while (true) {
                l.add(value());
                space();
                char d = s.charAt(i++);
                if (d == ']') {
                    return l;
                }
                if (d != ',') {
                    throw error("expected ',' or ']'");
                }
            }
        } else if (c == '"') {
            return string();
        } else if (s.startsWith("null", i)) {
            i += 4;
            return null;
        } else if (s.startsWith("true", i)) {
            i += 4;
            return Boolean.TRUE;
        } else if (s.startsWith("false", i)) {
            i += 5;
            return Boolean.FALSE;
        } else if (c == '-' || Character.isDigit(c)) {
            int start = i++;
            while (i < s.length() && Character.isDigit(s.charAt(i))) {
                i++;
            }
            if (i < s.length() && ".eE".indexOf(s.charAt(i)) >= 0) {
                throw error("not an integer");
            }
            return Long.parseLong(s.substring(start, i));
        }
        throw error("unexpected '" + c + "'");
    }

    String string() {
        if (i >= s.length() || s.charAt(i) != '"') {
            throw error("expected a string");
        }
        i++;
        StringBuilder sb = new StringBuilder();
        while (true) {
            if (i >= s.length()) {
                throw error("unterminated string");
            }
            char c = s.charAt(i++);
            if (c == '"') {
                return sb.toString();
            }
            if (c < 0x20) {
                throw error("raw control character in a string");
            }
            if (c != '\\') {
                sb.append(c);
                continue;
            }
            char e = s.charAt(i++);
            switch (e) {
                case '"': sb.append('"'); break;
                case '\\': sb.append('\\'); break;
                case '/': sb.append('/'); break;
                case 'b': sb.append('\b'); break;
                case 'f': sb.append('\f'); break;
                case 'n': sb.append('\n'); break;
                case 'r': sb.append('\r'); break;
                case 't': sb.append('\t'); break;
                case 'u':
                    sb.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                    i += 4;
                    break;
                default:
                    throw error("bad escape \\" + e);
            }
        }
    }
}

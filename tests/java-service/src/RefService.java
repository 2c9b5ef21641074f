/*
 * A reference Java retrieval service for ragsnap's tests: the JDK's own
 * com.sun.net.httpserver and Jackson, answering the way a Spring (AI) service
 * does. Its retrieval is plain term overlap; what matters is the wire format.
 *
 * Every answer is JSON (Content-Type: application/json;charset=UTF-8) in an
 * envelope, HTTP 200 even for errors:
 *
 *   {"code": 0, "message": "ok", "data": ...}          success
 *   {"code": 40001, "message": "k must be ...", "data": null}   an error
 *
 * except: a wrong or missing token (401 with a JSON body), an unknown path (404,
 * Spring's JSON error body) and the test fault "html500" (500, an HTML page).
 * Answers over 2 KiB go out chunked (sendResponseHeaders with length 0).
 *
 *   GET    /api/health                                   no token needed
 *   POST   /rag/lookup {question, k?, scope?, mode?}     data: {evidence, trace, rerank}
 *          mode: the retrieval variant (ragsnap.yaml's http.methods send it):
 *          "overlap" (the default) scores a chunk by the share of the question's
 *          terms its document's title and its text hold; "body" by its text only,
 *          so a title no longer lifts every chunk of its document
 *   GET    /api/search/similar?query=&topK=&kbScope=     data: {results}; a result's
 *          score is the overlap to the 4th power, so weak hits are tiny doubles
 *          that Jackson prints in E notation (4.1649312786339016E-4)
 *   GET    /api/documents                                data: {complete, documents}
 *   POST   /api/documents {name, content}                data: the stored document
 *          header Idempotency-Key: the same key again gets the first answer
 *          (replayed: true); the same key with another document is code 40901
 *   DELETE /api/documents?source=                        data: {deleted, docSource}
 *   PUT    /__test__/fault {path, kind, ms?}             only with REF_TEST_FAULTS=1
 *   DELETE /__test__/fault                                clears it
 *
 * Evidence blocks: {id, docSource, docId (absent when the document has none),
 * title, content, score (a double: Jackson prints 1.0E-4), meta: {breadcrumb
 * (null when the document has none), kbScope, category}}. No context pack.
 * The traces use the service's own names (ragsnap.yaml's http.lookup.trace maps
 * them): trace {strategy (the selected one, null without hits), fallbacks,
 * evidenceState, strategies: [{name, criteria, hits, bestScore, elapsedMs}]} and
 * rerank {enabled (false: there is no reranker), model, candidates, ranked:
 * [{id, docSource, similarity, keywordRank}]}.
 *
 * Environment: REF_TOKEN (the token: "Authorization: Bearer <t>" or
 * "X-Api-Token: <t>"; unset: no token needed), REF_PORT (default 0: a free
 * port), REF_TEST_FAULTS=1 (the fault switch). Once listening it prints
 * "ref-service listening on http://127.0.0.1:<port>" on one line.
 *
 * Build: javac -cp jackson-databind.jar:jackson-core.jar:jackson-annotations.jar -d out RefService.java
 */

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

public final class RefService {
    static final ObjectMapper JSON = new ObjectMapper();
    static final String JSON_TYPE = "application/json;charset=UTF-8";
    static final String PIPELINE = "java-ref/1";
    static final String EMBEDDING = "term-overlap/1";
    static final double MIN_SCORE = 1e-4; // printed by Jackson as 1.0E-4
    static final double WEAK_SCORE = 0.35;
    static final double SUFFICIENT_SCORE = 0.45;
    static final int CHUNKED_OVER = 2048;
    static final Set<String> STOP = Set.of(
        "a", "an", "and", "are", "as", "at", "be", "by", "do", "does", "for", "from", "how",
        "i", "if", "in", "is", "it", "of", "on", "or", "that", "the", "this", "to", "what",
        "when", "which", "who", "why", "with", "we", "our", "should", "can", "after");
    static final Pattern TOKEN = Pattern.compile("[\\p{L}\\p{N}_]+");

    /** One chunk of a stored document. */
    record Chunk(String id, Doc doc, String text, Set<String> terms, Set<String> bodyTerms) {}

    /** One stored document. */
    static final class Doc {
        String id;
        String source;
        String revision;
        String title;
        String breadcrumb;
        String category;
        String kbScope;
        String docId;
        List<Chunk> chunks = new ArrayList<>();
    }

    /** An answer: HTTP status, body, content type. */
    record Answer(int status, byte[] body, String type) {}

    /** The thrown form of an envelope error (HTTP 200, non-zero code). */
    static final class Refused extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final int code;

        Refused(int code, String message) {
            super(message);
            this.code = code;
        }
    }

    final Map<String, Doc> docs = new LinkedHashMap<>(); // by source
    final Map<String, ObjectNode> receipts = new HashMap<>(); // idempotency key -> answer
    final Map<String, String> receiptRevisions = new HashMap<>(); // key -> source\nrevision
    final String token = System.getenv("REF_TOKEN");
    final boolean faultsAllowed = "1".equals(System.getenv("REF_TEST_FAULTS"));
    volatile JsonNode fault; // {path, kind, ms?}

    public static void main(String[] args) throws IOException {
        String portText = System.getenv().getOrDefault("REF_PORT", "0");
        RefService service = new RefService();
        HttpServer server = HttpServer.create(
            new InetSocketAddress(InetAddress.getLoopbackAddress(), Integer.parseInt(portText)), 64);
        server.createContext("/", service::handle);
        server.setExecutor(Executors.newFixedThreadPool(8));
        server.start();
        System.out.println("ref-service listening on http://127.0.0.1:" + server.getAddress().getPort());
        System.out.flush();
    }

    // -- transport ----------------------------------------------------------------

    void handle(HttpExchange exchange) throws IOException {
        Answer answer;
        try {
            answer = route(exchange);
        } catch (Refused refused) {
            answer = envelope(refused.code, refused.getMessage(), null);
        } catch (RuntimeException unexpected) {
            unexpected.printStackTrace();
            answer = whitelabel(exchange.getRequestURI().getPath(), unexpected.toString());
        }
        try (exchange) {
            exchange.getResponseHeaders().set("Content-Type", answer.type());
            byte[] body = answer.body();
            if (body.length > CHUNKED_OVER) {
                exchange.sendResponseHeaders(answer.status(), 0); // chunked
                OutputStream out = exchange.getResponseBody();
                for (int at = 0; at < body.length; at += 1024) {
                    out.write(body, at, Math.min(1024, body.length - at));
                    out.flush();
                }
            } else {
                exchange.sendResponseHeaders(answer.status(), body.length);
                exchange.getResponseBody().write(body);
            }
        }
    }

    Answer route(HttpExchange exchange) throws IOException {
        String method = exchange.getRequestMethod();
        String path = exchange.getRequestURI().getPath();
        Map<String, String> query = params(exchange.getRequestURI().getRawQuery());
        byte[] raw;
        try (InputStream in = exchange.getRequestBody()) {
            raw = in.readAllBytes();
        }
        if (path.equals("/__test__/fault") && faultsAllowed) {
            if (method.equals("DELETE")) {
                fault = null;
            } else {
                fault = JSON.readTree(raw);
            }
            return envelope(0, "ok", null);
        }
        JsonNode armed = fault;
        if (armed != null && armed.path("path").asText().equals(path)) {
            String kind = armed.path("kind").asText();
            if (kind.equals("html500")) {
                return whitelabel(path, "java.lang.IllegalStateException: index is being rebuilt");
            } else if (kind.equals("code")) {
                throw new Refused(50001, "knowledge base is reindexing, try again later");
            } else if (kind.equals("slow")) {
                sleep(armed.path("ms").asLong(1000)); // before the first byte
            }
        }
        if (path.equals("/api/health") && method.equals("GET")) {
            return health();
        }
        if (!authorized(exchange)) {
            ObjectNode body = JSON.createObjectNode();
            body.put("code", 40100);
            body.put("message", "invalid or missing API token");
            body.putNull("data");
            return new Answer(401, JSON.writeValueAsBytes(body), JSON_TYPE);
        }
        switch (method + " " + path) {
            case "POST /rag/lookup":
                return lookup(body(raw));
            case "GET /api/search/similar":
                return similar(query);
            case "GET /api/documents":
                return listing();
            case "POST /api/documents":
                return upload(body(raw), exchange.getRequestHeaders().getFirst("Idempotency-Key"));
            case "DELETE /api/documents":
                return delete(query.get("source"));
            default:
                ObjectNode body = JSON.createObjectNode();
                body.put("timestamp", "2026-01-01T00:00:00.000+00:00");
                body.put("status", 404);
                body.put("error", "Not Found");
                body.put("path", path);
                return new Answer(404, JSON.writeValueAsBytes(body), JSON_TYPE);
        }
    }

    boolean authorized(HttpExchange exchange) {
        if (token == null || token.isEmpty()) {
            return true;
        }
        String bearer = exchange.getRequestHeaders().getFirst("Authorization");
        String apiToken = exchange.getRequestHeaders().getFirst("X-Api-Token");
        return ("Bearer " + token).equals(bearer) || token.equals(apiToken);
    }

    static Answer envelope(int code, String message, JsonNode data) {
        ObjectNode body = JSON.createObjectNode();
        body.put("code", code);
        body.put("message", message);
        body.set("data", data);
        try {
            return new Answer(200, JSON.writeValueAsBytes(body), JSON_TYPE);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    static Answer whitelabel(String path, String error) {
        String html = "<html><body><h1>Whitelabel Error Page</h1>"
            + "<p>This application has no explicit mapping for /error, so you are seeing this as a "
            + "fallback.</p><div id='created'>Thu Jan 01 00:00:00 UTC 2026</div>"
            + "<div>There was an unexpected error (type=Internal Server Error, status=500).</div>"
            + "<div>" + error.replace("<", "&lt;") + " at " + path + "</div></body></html>";
        return new Answer(500, html.getBytes(StandardCharsets.UTF_8), "text/html;charset=UTF-8");
    }

    static JsonNode body(byte[] raw) {
        try {
            JsonNode node = JSON.readTree(raw);
            if (node == null || !node.isObject()) {
                throw new Refused(40000, "the request body must be a JSON object");
            }
            return node;
        } catch (IOException e) {
            throw new Refused(40000, "the request body is not JSON");
        }
    }

    static Map<String, String> params(String rawQuery) {
        Map<String, String> out = new HashMap<>();
        if (rawQuery == null) {
            return out;
        }
        for (String pair : rawQuery.split("&")) {
            int eq = pair.indexOf('=');
            String key = eq < 0 ? pair : pair.substring(0, eq);
            String value = eq < 0 ? "" : pair.substring(eq + 1);
            out.put(URLDecoder.decode(key, StandardCharsets.UTF_8),
                URLDecoder.decode(value, StandardCharsets.UTF_8));
        }
        return out;
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    // -- endpoints ----------------------------------------------------------------

    synchronized Answer health() {
        ObjectNode data = JSON.createObjectNode();
        data.put("status", "UP");
        data.put("pipelineVersion", PIPELINE);
        data.put("documents", docs.size());
        data.put("chunks", docs.values().stream().mapToInt(d -> d.chunks.size()).sum());
        return envelope(0, "ok", data);
    }

    static int topK(String text, String name) {
        int k;
        try {
            k = text == null ? 5 : Integer.parseInt(text.trim());
        } catch (NumberFormatException e) {
            throw new Refused(40001, name + " must be a whole number");
        }
        if (k < 1 || k > 50) {
            throw new Refused(40001, name + " must be between 1 and 50, not " + k);
        }
        return k;
    }

    static String question(String text, String name) {
        if (text == null || text.isBlank()) {
            throw new Refused(40001, name + " must not be blank");
        }
        return text;
    }

    Answer lookup(JsonNode request) {
        String q = question(request.path("question").asText(null), "question");
        int k = topK(request.has("k") ? request.get("k").asText() : null, "k");
        String scope = request.hasNonNull("scope") ? request.get("scope").asText() : null;
        String mode = request.hasNonNull("mode") ? request.get("mode").asText() : "overlap";
        if (!mode.equals("overlap") && !mode.equals("body")) {
            throw new Refused(40001, "mode must be overlap or body, not " + mode);
        }
        boolean body = mode.equals("body");
        Set<String> terms = terms(q);
        ArrayNode attempts = JSON.createArrayNode();
        ArrayNode reasons = JSON.createArrayNode();
        List<Map.Entry<Chunk, Double>> hits;
        String selected;
        if (scope != null) {
            long started = System.nanoTime();
            hits = search(terms, scope, body);
            attempts.add(strategy("filtered", scope, hits, started));
            selected = "filtered";
            String reason = hits.isEmpty() ? "filtered-empty"
                : hits.get(0).getValue() < WEAK_SCORE ? "filtered-weak" : null;
            if (reason != null) {
                reasons.add(reason);
                started = System.nanoTime();
                List<Map.Entry<Chunk, Double>> wide = search(terms, null, body);
                attempts.add(strategy("unfiltered", null, wide, started));
                if (!wide.isEmpty()) {
                    hits = wide;
                    selected = "unfiltered";
                }
            }
        } else {
            long started = System.nanoTime();
            hits = search(terms, null, body);
            attempts.add(strategy("unfiltered", null, hits, started));
            selected = "unfiltered";
        }
        ArrayNode evidence = JSON.createArrayNode();
        for (Map.Entry<Chunk, Double> hit : hits.subList(0, Math.min(k, hits.size()))) {
            Chunk chunk = hit.getKey();
            ObjectNode block = evidence.addObject();
            block.put("id", chunk.id());
            block.put("docSource", chunk.doc().source);
            if (chunk.doc().docId != null) { // absent, not null, when there is none
                block.put("docId", chunk.doc().docId);
            }
            block.put("title", chunk.doc().title);
            block.put("content", chunk.text());
            block.put("score", hit.getValue());
            ObjectNode meta = block.putObject("meta");
            meta.put("breadcrumb", chunk.doc().breadcrumb); // null when there is none
            meta.put("kbScope", chunk.doc().kbScope);
            meta.put("category", chunk.doc().category);
        }
        ObjectNode trace = JSON.createObjectNode();
        trace.put("strategy", hits.isEmpty() ? null : selected);
        trace.set("fallbacks", reasons);
        double top = hits.isEmpty() ? 0 : hits.get(0).getValue();
        trace.put("evidenceState",
            hits.isEmpty() ? "none" : top >= SUFFICIENT_SCORE ? "sufficient" : "partial");
        trace.set("strategies", attempts);
        ObjectNode rerank = JSON.createObjectNode(); // no reranker: the same list twice
        rerank.put("enabled", false);
        rerank.putNull("model");
        ArrayNode ranked = JSON.createArrayNode();
        int position = 0;
        for (Map.Entry<Chunk, Double> hit : hits.subList(0, Math.min(k, hits.size()))) {
            ObjectNode item = ranked.addObject();
            item.put("id", hit.getKey().id());
            item.put("docSource", hit.getKey().doc().source);
            item.put("similarity", hit.getValue());
            item.put("keywordRank", ++position);
        }
        rerank.set("candidates", ranked);
        rerank.set("ranked", ranked.deepCopy());
        ObjectNode data = JSON.createObjectNode();
        data.set("evidence", evidence);
        data.set("trace", trace);
        data.set("rerank", rerank);
        return envelope(0, "ok", data);
    }

    static ObjectNode strategy(String name, String scope, List<Map.Entry<Chunk, Double>> hits,
                               long started) {
        ObjectNode strategy = JSON.createObjectNode();
        strategy.put("name", name);
        ObjectNode criteria = strategy.putObject("criteria");
        criteria.put("kbScope", scope);
        criteria.put("minScore", MIN_SCORE);
        strategy.put("hits", hits.size());
        if (hits.isEmpty()) {
            strategy.putNull("bestScore");
        } else {
            strategy.put("bestScore", hits.get(0).getValue());
        }
        strategy.put("elapsedMs", (System.nanoTime() - started) / 1e6);
        return strategy;
    }

    Answer similar(Map<String, String> query) {
        String q = question(query.get("query"), "query");
        int k = topK(query.get("topK"), "topK");
        List<Map.Entry<Chunk, Double>> hits = search(terms(q), query.get("kbScope"), false);
        ArrayNode results = JSON.createArrayNode();
        for (Map.Entry<Chunk, Double> hit : hits.subList(0, Math.min(k, hits.size()))) {
            Chunk chunk = hit.getKey();
            ObjectNode item = results.addObject();
            item.put("id", chunk.id());
            item.put("docSource", chunk.doc().source);
            if (chunk.doc().docId != null) {
                item.put("docId", chunk.doc().docId);
            }
            item.put("score", Math.pow(hit.getValue(), 4)); // weak hits print as 4.1E-4
            ObjectNode meta = item.putObject("meta");
            meta.put("breadcrumb", chunk.doc().breadcrumb);
            meta.put("kbScope", chunk.doc().kbScope);
        }
        ObjectNode data = JSON.createObjectNode();
        data.set("results", results);
        return envelope(0, "ok", data);
    }

    synchronized Answer listing() {
        ObjectNode data = JSON.createObjectNode();
        data.put("complete", true);
        ArrayNode list = data.putArray("documents");
        for (Doc doc : docs.values()) {
            list.add(record(doc));
        }
        return envelope(0, "ok", data);
    }

    static ObjectNode record(Doc doc) {
        ObjectNode node = JSON.createObjectNode();
        node.put("id", doc.id);
        node.put("docSource", doc.source);
        node.put("revision", doc.revision);
        node.put("embedding", EMBEDDING);
        node.put("kbScope", doc.kbScope);
        node.put("title", doc.title);
        node.put("chunks", doc.chunks.size());
        return node;
    }

    synchronized Answer upload(JsonNode request, String key) {
        String name = request.path("name").asText("");
        String content = request.path("content").asText(null);
        if (content == null) {
            throw new Refused(40001, "content must be the document's Markdown text");
        }
        String revision = sha256(content);
        if (key != null) {
            if (key.isEmpty() || key.length() > 200 || !key.chars().allMatch(c -> c > 32 && c < 127)) {
                throw new Refused(40001, "Idempotency-Key must be 1-200 printable ASCII characters");
            }
            ObjectNode first = receipts.get(key);
            if (first != null) {
                Map<String, String> meta = frontmatter(content, name);
                if (!receiptRevisions.get(key).equals(meta.get("source") + "\n" + revision)) {
                    throw new Refused(40901, "Idempotency-Key " + key + " was used for another document");
                }
                ObjectNode again = first.deepCopy();
                again.put("replayed", true);
                return envelope(0, "ok", again);
            }
        }
        Map<String, String> meta = frontmatter(content, name);
        String source = meta.get("source");
        Doc old = docs.get(source);
        String status;
        Doc doc;
        if (old != null && old.revision.equals(revision)) {
            status = "unchanged";
            doc = old;
        } else {
            doc = new Doc();
            doc.id = old != null ? old.id : UUID.randomUUID().toString();
            doc.source = source;
            doc.revision = revision;
            doc.title = meta.get("title");
            doc.breadcrumb = meta.get("breadcrumb");
            doc.category = meta.get("category");
            doc.kbScope = meta.get("kb_scope");
            doc.docId = meta.get("doc_id");
            chunk(doc, meta.get("\u0000body"));
            docs.put(source, doc);
            status = old == null ? "added" : "updated";
        }
        ObjectNode answer = record(doc);
        answer.put("status", status);
        if (key != null) {
            answer.put("idempotencyKey", key);
            receipts.put(key, answer.deepCopy());
            receiptRevisions.put(key, source + "\n" + revision);
        } else {
            answer.putNull("idempotencyKey");
        }
        answer.put("replayed", false);
        return envelope(0, "ok", answer);
    }

    synchronized Answer delete(String source) {
        if (source == null || source.isBlank()) {
            throw new Refused(40001, "source must not be blank");
        }
        Doc gone = docs.remove(source);
        if (gone == null) {
            throw new Refused(40400, "document " + source + " not found");
        }
        ObjectNode data = JSON.createObjectNode();
        data.put("deleted", true);
        data.put("docSource", source);
        return envelope(0, "ok", data);
    }

    // -- documents and retrieval -------------------------------------------------

    /** The frontmatter's scalar fields (quotes stripped) and the body under "\0body". */
    static Map<String, String> frontmatter(String content, String name) {
        String text = content.replace("\r\n", "\n");
        if (text.startsWith("\uFEFF")) {
            text = text.substring(1);
        }
        if (!text.startsWith("---\n")) {
            throw new Refused(40002, name + ": the document has no frontmatter");
        }
        int end = text.indexOf("\n---\n", 3);
        int endDots = text.indexOf("\n...\n", 3);
        if (end < 0 || (endDots >= 0 && endDots < end)) {
            end = endDots;
        }
        if (end < 0) {
            throw new Refused(40002, name + ": the frontmatter is not closed");
        }
        Map<String, String> meta = new HashMap<>();
        for (String line : text.substring(4, end).split("\n")) {
            int colon = line.indexOf(':');
            if (colon <= 0 || Character.isWhitespace(line.charAt(0)) || line.startsWith("#")) {
                continue;
            }
            String value = line.substring(colon + 1).trim();
            if (value.length() >= 2 && (value.startsWith("\"") && value.endsWith("\"")
                    || value.startsWith("'") && value.endsWith("'"))) {
                value = value.substring(1, value.length() - 1);
            }
            if (!value.isEmpty() && !value.equals("null") && !value.equals("~")) {
                meta.put(line.substring(0, colon).trim(), value);
            }
        }
        String source = meta.get("source");
        if (source == null) {
            throw new Refused(40002, name + ": the frontmatter has no source");
        }
        meta.put("\u0000body", text.substring(end + 5));
        return meta;
    }

    /** Chunk 0: the text before the first "## " heading; then one chunk per section. */
    static void chunk(Doc doc, String body) {
        List<String> sections = new ArrayList<>();
        StringBuilder current = new StringBuilder();
        for (String line : body.split("\n", -1)) {
            if (line.startsWith("## ")) {
                sections.add(current.toString());
                current = new StringBuilder();
            }
            current.append(line).append('\n');
        }
        sections.add(current.toString());
        for (String section : sections) {
            String text = section.strip();
            if (!text.isEmpty()) {
                doc.chunks.add(new Chunk(doc.source + "#" + doc.chunks.size(), doc, text,
                    terms(doc.title + " " + text), terms(text)));
            }
        }
    }

    /** Lower-cased letter/digit runs without stop words; a CJK run as character bigrams. */
    static Set<String> terms(String text) {
        Set<String> out = new LinkedHashSet<>();
        Matcher m = TOKEN.matcher(text.toLowerCase(Locale.ROOT));
        while (m.find()) {
            String run = m.group();
            StringBuilder latin = new StringBuilder();
            StringBuilder cjk = new StringBuilder();
            for (int i = 0; i < run.length(); ) {
                int cp = run.codePointAt(i);
                boolean han = Character.UnicodeScript.of(cp) == Character.UnicodeScript.HAN;
                if (han) {
                    flushLatin(latin, out);
                    cjk.appendCodePoint(cp);
                } else {
                    flushCjk(cjk, out);
                    latin.appendCodePoint(cp);
                }
                i += Character.charCount(cp);
            }
            flushLatin(latin, out);
            flushCjk(cjk, out);
        }
        return out;
    }

    static void flushLatin(StringBuilder latin, Set<String> out) {
        String word = latin.toString();
        if (!word.isEmpty() && !STOP.contains(word)) {
            out.add(word);
        }
        latin.setLength(0);
    }

    static void flushCjk(StringBuilder cjk, Set<String> out) {
        int[] cps = cjk.codePoints().toArray();
        if (cps.length == 1) {
            out.add(new String(cps, 0, 1));
        }
        for (int i = 0; i + 1 < cps.length; i++) {
            out.add(new String(cps, i, 2));
        }
        cjk.setLength(0);
    }

    /** Chunks by the share of the query's terms they hold, with their document's title
     *  or (bodyOnly) without it (ties: source, chunk order). */
    synchronized List<Map.Entry<Chunk, Double>> search(Set<String> query, String scope,
                                                       boolean bodyOnly) {
        List<Map.Entry<Chunk, Double>> hits = new ArrayList<>();
        if (query.isEmpty()) {
            return hits;
        }
        for (Doc doc : docs.values()) {
            if (scope != null && !scope.equals(doc.kbScope)) {
                continue;
            }
            for (Chunk chunk : doc.chunks) {
                Set<String> held = bodyOnly ? chunk.bodyTerms() : chunk.terms();
                long shared = query.stream().filter(held::contains).count();
                double score = (double) shared / query.size();
                if (score >= MIN_SCORE) {
                    hits.add(Map.entry(chunk, score));
                }
            }
        }
        hits.sort(Comparator.<Map.Entry<Chunk, Double>>comparingDouble(Map.Entry::getValue)
            .reversed()
            .thenComparing(e -> e.getKey().doc().source)
            .thenComparing(e -> e.getKey().id().length())
            .thenComparing(e -> e.getKey().id()));
        return hits;
    }

    static String sha256(String text) {
        try {
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            return HexFormat.of().formatHex(digest.digest(text.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}

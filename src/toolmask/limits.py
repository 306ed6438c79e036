"""Resource caps that turn hostile or accidental blow-ups into :class:`LimitError`.

Each bound says what it protects. The library defaults are generous; the server uses
:data:`SERVER_LIMITS`, which are tighter.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

__all__ = ["DEFAULT_LIMITS", "SERVER_LIMITS", "Limits"]


@dataclass(frozen=True, slots=True)
class Limits:
    #: bytes of JSON text of one schema (protects the compiler from huge inputs)
    max_schema_bytes: int = 2_000_000
    #: nesting depth of the schema: JSON path segments from the root of the schema document to
    #: its deepest value, and subschemas entered one inside another through ``$ref`` /
    #: ``allOf`` / ``anyOf`` / ``oneOf`` / ``not`` (protects the Python stack of every recursive
    #: reader: the compiler, the JSON encoder, the validator)
    max_schema_depth: int = 128
    #: rules in one grammar (protects the automaton builder)
    max_rules: int = 20_000
    #: IR nodes in one grammar, counted after lowering (protects memory)
    max_grammar_nodes: int = 2_000_000
    #: automaton positions (states of all per-rule DFAs together)
    max_automaton_states: int = 500_000
    #: states of one string / number language DFA built from pattern, format, length, ranges
    max_dfa_states: int = 20_000
    #: bounded repetitions are unrolled up to this many copies; larger bounds are an error
    #: unless the caller picks a looser enforcement (the schema compiler then hands the bound
    #: to the post-decode validator)
    max_repeat_unroll: int = 2_000
    #: depth of the pushdown stack at run time; a deeper parse is rejected, never an exception
    max_stack_depth: int = 2_000
    #: number of simultaneous stacks (parallel parses of an ambiguous grammar) in one state
    max_stacks: int = 4_096
    #: automaton states kept with memoised transitions; past this the transition memos are
    #: dropped so unreferenced states can be freed (protects memory in long sessions)
    max_cached_states: int = 200_000
    #: wall-clock seconds for one schema compilation (checked between steps)
    max_compile_seconds: float = 30.0
    #: bytes of token bitmasks cached per compiled grammar (ceil(V/32) * 4 bytes each)
    max_mask_cache_bytes: int = 256 * 1024 * 1024
    #: objects with more named properties than this keep schema order even when any order was
    #: asked for (``property_order="any"``): any order needs one rule per set of keys already
    #: written, 2**n rules for n properties (not a refusal: schema order is a subset)
    max_any_order_properties: int = 10

    # -- schema and regex compilation (toolmask.schema, toolmask.grammar) ----------------------
    #: alternatives of one JSON type in one merged schema: allOf / anyOf / oneOf / not combine
    #: branches by products, and each alternative left after merging becomes its own rule
    #: chain (protects grammar size and compile time; alternatives that differ in one key's
    #: value are merged first, so this counts what a grammar really needs). Literal values
    #: (an enum's arrays and objects) do not count: they share one trie, bounded by
    #: ``max_literal_bytes``; nor does a product with one alternative, which only filters
    max_alternatives: int = 1_024
    #: object alternatives of one ``anyOf`` / ``oneOf`` when a key tells them apart (every
    #: alternative requires it with its own ``const`` / ``enum`` values: the automaton follows
    #: one alternative once that key's value is read, so the cost is linear in the branches);
    #: unions without such a key stay bounded by ``max_alternatives``
    max_discriminated_alternatives: int = 16_384
    #: bytes of the spellings of one literal set (an ``enum`` / ``const``, or the literal
    #: containers of one union) lowered as one byte trie: its JSON texts, each object of 2 to
    #: 4 members once per member order (protects compile time and grammar size; the number of
    #: values is not bounded apart, an enum of n values costs O(bytes))
    max_literal_bytes: int = 8_000_000
    #: regions the key space of one object splits into: every patternProperties pattern and
    #: additionalProperties split it (n overlapping patterns can make 2**n regions; disjoint
    #: ones n + 1); each region is a key-language automaton (protects compile time)
    max_key_regions: int = 256
    #: oneOf branches up to which overlapping branches are compiled exactly (each branch minus
    #: all the others: n * (n - 1) complements and their products); past it the grammar takes
    #: the union and the post-decode validator checks that exactly one branch matches (not a
    #: refusal; branches that cannot overlap are always a plain union)
    max_one_of_exact: int = 8
    #: nesting depth of groups and lookaheads in one regex (protects the Python stack of the
    #: regex parser and of the automaton construction)
    max_regex_nesting: int = 64
    #: code-point ranges of one character class rebuilt from UTF-8 byte classes when a grammar
    #: is printed as GBNF / Lark; past it the bytes are printed as they are (same language, a
    #: longer text: not a refusal)
    max_class_ranges: int = 65_536

    # -- caches and matcher output (GrammarCompiler, Matcher) --------------------------------
    # A GrammarCompiler reads these from its own ``limits``; none refuses input, each bounds
    # memory (or, for max_forced_bytes, the work of one call) and costs recomputation when hit.
    #: bytes one GrammarCompiler may hold (automata, cached masks, vocabulary indexes, the
    #: schema and regex compilers' memos); past it the least recently used compiled grammars
    #: are dropped at the next compile, then the oldest memos (cost: their masks, automata and
    #: languages are rebuilt when they are needed again)
    max_cache_bytes: int = 1024 * 1024 * 1024
    #: compiled grammars (and automata) kept by one compiler, least recently used dropped first
    max_compiled_grammars: int = 64
    #: vocabulary indexes kept (tries and run tables: ~11 MB compiled, ~0.5 GB pure-Python for
    #: a 151k vocabulary; a dropped one is rebuilt in ~0.1 s compiled, ~1.5 s pure)
    max_vocab_indexes: int = 8
    #: tool-argument grammars kept by the tool layer, by (schema, options)
    max_schema_grammars: int = 256
    #: per-tool call grammars (a turn's parts, by tool fingerprint, format and argument
    #: options) kept by the tool layer, and as many tool fingerprints; a turn over more tools
    #: than this still compiles, its parts are rebuilt the next time (cost: a schema
    #: compilation each)
    max_tool_parts: int = 4_096
    #: compiled turns (a turn over every tool, and the name filters of allowed subsets) kept by
    #: the tool layer, keyed without reading their grammars (cost when dropped: a compile)
    max_compiled_turns: int = 256
    #: jsonschema validators kept by the tool layer, by schema
    max_validators: int = 512
    #: output-sanitizer patterns kept, by marker set
    max_sanitizer_patterns: int = 64
    #: string languages kept per kind by the schema and regex compilers, by their input
    #: (regex DFAs, key-name complements, length languages) and enum key sets; counted in
    #: max_cache_bytes (cost when dropped: built again, a DFA construction each)
    max_language_memos: int = 512
    #: small pure results kept per kind: character classes as UTF-8 / JSON-string IR, the
    #: fraction-digit regexes of number bounds, the unknown format names already warned about
    #: (each warned about once while it is kept); counted in max_cache_bytes
    max_memo_entries: int = 4096
    #: shared run tables (run classes, base bitmasks, exit tries) kept per vocabulary index,
    #: least recently used dropped first; a table a position still holds stays (cost: a
    #: dropped one is rebuilt, one pass over the token bytes; V/8 bytes per base bitmask)
    max_run_tables: int = 256
    #: longest run Matcher.forced_bytes returns (cost: one transition per byte)
    max_forced_bytes: int = 4096

    # -- requests (toolmask serve) ---------------------------------------------------------
    #: bytes of one request body, answered 413 past it before parsing (protects memory)
    max_request_bytes: int = 8 * 1024 * 1024
    #: stop sequences one request may give (OpenAI's own limit is 4; cost: each is searched
    #: for in every decoded chunk)
    max_stop_sequences: int = 4
    #: characters of one stop sequence (cost: the text held back while a stop may be forming)
    max_stop_chars: int = 256

    #: the hash, computed on first use (0: not yet): limits are part of the key of every memo
    #: and compiled grammar, and the generated hash hashes every field at each call
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        h = self._hash
        if not h:
            h = hash(tuple(getattr(self, name) for name in _COMPARED)) or 1
            object.__setattr__(self, "_hash", h)
        return h


#: the fields equality compares (what the hash covers)
_COMPARED = tuple(f.name for f in fields(Limits) if f.compare)


DEFAULT_LIMITS = Limits()

SERVER_LIMITS = Limits(
    max_schema_bytes=200_000,
    max_schema_depth=64,
    max_rules=5_000,
    max_grammar_nodes=300_000,
    max_automaton_states=100_000,
    max_dfa_states=5_000,
    max_repeat_unroll=500,
    max_stack_depth=512,
    max_stacks=1_024,
    max_cached_states=50_000,
    max_compile_seconds=5.0,
    max_mask_cache_bytes=64 * 1024 * 1024,
    # schema and regex compilation
    max_alternatives=256,
    max_discriminated_alternatives=2_048,
    max_literal_bytes=1_000_000,
    max_key_regions=64,
    max_one_of_exact=6,
    max_regex_nesting=32,
    max_any_order_properties=8,
    max_cache_bytes=256 * 1024 * 1024,
    max_vocab_indexes=2,
    max_tool_parts=2_048,
    max_language_memos=128,
)

//! English plurals as `github.com/gobuffalo/flect` v1.0.3 forms them, the library upstream kro
//! names generated CRDs with (`flect.Pluralize(strings.ToLower(kind))`).
//!
//! The procedure, in flect's order:
//!
//! 1. The text is cut into words (see [`words`]); the last word decides. No words, no plural.
//! 2. The whole text is looked up in the dictionary: a known singular gives its plural, a known
//!    plural is returned as it is.
//! 3. The last word, lower-cased, is looked up the same way; its replacement keeps the last
//!    word's capital initial.
//! 4. The suffix rules are tried in order on the last word as written (case-sensitive); the
//!    first whose suffix ends the word either keeps the text (the suffix is a plural ending) or
//!    swaps the suffix for its plural.
//! 5. Otherwise a last word ending in `s` is taken as plural already, and anything else gets an
//!    `s`.
//!
//! Replacing the last word goes through flect's "replace suffix": when the text does not end
//! with the last word as written (the last word was an acronym and came out upper-cased, or
//! separators follow it), the replacement is appended to the whole text instead. That is how
//! flect turns `dns` into `dnsDNSes`, and it is kept here on purpose: the point is the same CRD
//! name as upstream, even where upstream's is not a valid one.
//!
//! ASCII text is handled exactly as flect does. Beyond ASCII, flect consults Go's Unicode
//! categories, which this module approximates with Rust's `char` properties; a kind cannot hold
//! such characters.

/// An entry of flect's dictionary.
#[derive(Debug, Clone, Copy)]
struct Word {
    singular: &'static str,
    plural: &'static str,
    /// Another accepted plural: also recognised as plural already.
    other_plural: Option<&'static str>,
    /// Only the whole word (or the whole last word) matches, never the end of a longer one.
    whole_word_only: bool,
    /// The plural is not recognised as plural already (it belongs to another singular too).
    one_way: bool,
}

impl Word {
    const fn new(singular: &'static str, plural: &'static str) -> Self {
        Word {
            singular,
            plural,
            other_plural: None,
            whole_word_only: false,
            one_way: false,
        }
    }

    /// A word whose plural is itself.
    const fn same(word: &'static str) -> Self {
        Word::new(word, word)
    }

    const fn or(self, other_plural: &'static str) -> Self {
        Word {
            other_plural: Some(other_plural),
            ..self
        }
    }

    const fn whole(self) -> Self {
        Word {
            whole_word_only: true,
            ..self
        }
    }

    const fn one_way(self) -> Self {
        Word {
            one_way: true,
            ..self
        }
    }

    /// The plurals that, met as a whole word, are left alone.
    fn recognised_plurals(&self) -> impl Iterator<Item = &'static str> {
        let plurals = if self.one_way {
            [None, None]
        } else {
            [Some(self.plural), self.other_plural]
        };
        plurals.into_iter().flatten()
    }
}

/// flect v1.0.3's dictionary, in its order (the order matters: the suffix rules made from it
/// are tried last entry first).
const DICTIONARY: &[Word] = &[
    // Same in both numbers.
    Word::same("aircraft"),
    Word::same("beef").or("beefs"),
    Word::same("bison"),
    Word::same("blues").one_way(),
    Word::same("chassis"),
    Word::same("deer"),
    Word::same("fish").or("fishes"),
    Word::same("moose"),
    Word::same("police"),
    Word::same("salmon").or("salmons"),
    Word::same("series"),
    Word::same("sheep"),
    Word::same("shrimp").or("shrimps"),
    Word::same("species"),
    Word::same("swine").or("swines"),
    Word::same("trout").or("trouts"),
    Word::same("tuna").or("tunas"),
    Word::same("you"),
    // -en and vowel changes.
    Word::new("child", "children"),
    Word::new("ox", "oxen").whole(),
    Word::new("foot", "feet"),
    Word::new("goose", "geese"),
    Word::new("man", "men"),
    Word::new("human", "humans"),
    Word::new("louse", "lice").whole(),
    Word::new("mouse", "mice"),
    Word::new("tooth", "teeth"),
    Word::new("woman", "women"),
    Word::new("die", "dice").whole(),
    Word::new("person", "people"),
    // French -u.
    Word::new("adieu", "adieux").or("adieus"),
    Word::new("fabliau", "fabliaux"),
    Word::new("bureau", "bureaus").or("bureaux"),
    // Greek -on.
    Word::new("criterion", "criteria"),
    Word::new("ganglion", "ganglia").or("ganglions"),
    Word::new("lexicon", "lexica").or("lexicons"),
    Word::new("mitochondrion", "mitochondria").or("mitochondrions"),
    Word::new("noumenon", "noumena"),
    Word::new("phenomenon", "phenomena"),
    Word::new("taxon", "taxa"),
    // Latin -um.
    Word::same("media"),
    Word::new("medium", "media").or("mediums").one_way(),
    Word::new("stadium", "stadiums").or("stadia"),
    Word::new("aquarium", "aquaria").or("aquariums"),
    Word::new("auditorium", "auditoria").or("auditoriums"),
    Word::new("symposium", "symposia").or("symposiums"),
    Word::new("curriculum", "curriculums").or("curricula"),
    Word::new("quota", "quotas"),
    // Latin -us.
    Word::new("alumnus", "alumni").or("alumnuses"),
    Word::new("bacillus", "bacilli"),
    Word::new("cactus", "cacti").or("cactuses"),
    Word::new("coccus", "cocci"),
    Word::new("focus", "foci").or("focuses"),
    Word::new("locus", "loci").or("locuses"),
    Word::new("nucleus", "nuclei").or("nucleuses"),
    // flect's spelling, kept: the point is flect's output.
    Word::new("octopus", "octupuses").or("octopi"),
    Word::new("radius", "radii").or("radiuses"),
    Word::new("syllabus", "syllabi"),
    Word::new("corpus", "corpora").or("corpuses"),
    Word::new("genus", "genera"),
    // Latin -a.
    Word::new("alumna", "alumnae"),
    Word::new("vertebra", "vertebrae"),
    Word::new("differentia", "differentiae"),
    Word::new("minutia", "minutiae"),
    Word::new("vita", "vitae"),
    Word::new("larva", "larvae"),
    Word::new("postcava", "postcavae"),
    Word::new("praecava", "praecavae"),
    Word::new("uva", "uvae"),
    // Latin -ex and -ix.
    Word::new("apex", "apices").or("apexes"),
    Word::new("codex", "codices").or("codexes"),
    Word::new("index", "indices").or("indexes"),
    Word::new("latex", "latices").or("latexes"),
    Word::new("vertex", "vertices").or("vertexes"),
    Word::new("vortex", "vortices").or("vortexes"),
    Word::new("appendix", "appendices").or("appendixes"),
    Word::new("radix", "radices").or("radixes"),
    Word::new("helix", "helices").or("helixes"),
    // Latin -is.
    Word::new("axis", "axes").whole(),
    Word::new("crisis", "crises"),
    Word::new("ellipsis", "ellipses").one_way(),
    Word::new("genesis", "geneses"),
    Word::new("oasis", "oases"),
    Word::new("thesis", "theses"),
    Word::new("testis", "testes"),
    Word::new("base", "bases"),
    Word::new("basis", "bases").one_way(),
    Word::new("alias", "aliases").whole(),
    Word::new("vedalia", "vedalias"),
    // Endings that the suffix rules would get wrong.
    Word::new("use", "uses").whole(),
    Word::new("abuse", "abuses"),
    Word::new("cause", "causes"),
    Word::new("clause", "clauses"),
    Word::new("cruse", "cruses"),
    Word::new("excuse", "excuses"),
    Word::new("fuse", "fuses"),
    Word::new("house", "houses"),
    Word::new("misuse", "misuses"),
    Word::new("muse", "muses"),
    Word::new("pause", "pauses"),
    Word::new("ache", "aches"),
    Word::new("topaz", "topazes"),
    Word::new("buffalo", "buffaloes").or("buffalos"),
    Word::new("potato", "potatoes"),
    Word::new("tomato", "tomatoes"),
    // Uncountable.
    Word::same("equipment"),
    Word::same("information"),
    Word::same("jeans"),
    Word::same("money"),
    Word::same("news"),
    Word::same("rice"),
    // Exceptions to -f(e) → -ves and its reverse.
    Word::new("dwarf", "dwarfs").or("dwarves"),
    Word::new("hoof", "hoofs").or("hooves"),
    Word::new("thief", "thieves"),
    Word::new("chive", "chives"),
    Word::new("hive", "hives"),
    Word::new("move", "moves"),
    // Exceptions to -y → -ies.
    Word::new("movie", "movies"),
    Word::new("cookie", "cookies"),
    // Exceptions to -um → -a and -a → -ae.
    Word::new("pretorium", "pretoriums"),
    Word::new("agenda", "agendas"),
    Word::new("formula", "formulas").or("formulae"),
    // Exceptions to -o → -oes.
    Word::new("shoe", "shoes"),
    Word::new("toe", "toes").whole(),
    Word::same("graffiti"),
    // Abbreviations.
    Word::new("ID", "IDs").whole(),
];

/// flect v1.0.3's suffix rules, singular ending → plural ending, in the order they are tried
/// (after the dictionary's). Each is tried as its plural ending first (which keeps the text),
/// then as its singular ending.
const SUFFIXES: &[(&str, &str)] = &[
    // -f and -fe.
    ("tive", "tives"),
    ("eaf", "eaves"),
    ("oaf", "oaves"),
    ("afe", "aves"),
    ("arf", "arves"),
    ("rfe", "rves"),
    ("rf", "rves"),
    ("lf", "lves"),
    ("fe", "ves"),
    // -y.
    ("ay", "ays"),
    ("ey", "eys"),
    ("oy", "oys"),
    ("quy", "quies"),
    ("uy", "uys"),
    ("y", "ies"),
    // French -eau.
    ("eau", "eaux"),
    // Latin -a; flect writes -bulae for all five, which is kept.
    ("bula", "bulae"),
    ("dula", "bulae"),
    ("lula", "bulae"),
    ("nula", "bulae"),
    ("vula", "bulae"),
    // Greek -on.
    ("hedron", "hedra"),
    // Latin -um.
    ("ium", "ia"),
    ("seum", "seums"),
    ("eum", "ea"),
    ("oum", "oa"),
    ("stracum", "straca"),
    ("dum", "da"),
    ("elum", "ela"),
    ("ilum", "ila"),
    ("olum", "ola"),
    ("ulum", "ula"),
    ("llum", "lla"),
    ("ylum", "yla"),
    ("imum", "ima"),
    ("ernum", "erna"),
    ("gnum", "gna"),
    ("brum", "bra"),
    ("crum", "cra"),
    ("terum", "tera"),
    ("serum", "sera"),
    ("trum", "tra"),
    ("antum", "anta"),
    ("atum", "ata"),
    ("entum", "enta"),
    ("etum", "eta"),
    ("itum", "ita"),
    ("otum", "ota"),
    ("utum", "uta"),
    ("ctum", "cta"),
    ("ovum", "ova"),
    // Latin -ix.
    ("trix", "trices"),
    // Greek -is.
    ("iasis", "iases"),
    ("mesis", "meses"),
    ("kinesis", "kineses"),
    ("resis", "reses"),
    ("gnosis", "gnoses"),
    ("opsis", "opses"),
    ("ysis", "yses"),
    // Sibilants and -o.
    ("ouse", "ouses"),
    ("lause", "lauses"),
    ("us", "uses"),
    ("ch", "ches"),
    ("io", "ios"),
    ("sh", "shes"),
    ("ss", "sses"),
    ("ez", "ezzes"),
    ("iz", "izzes"),
    ("tz", "tzes"),
    ("zz", "zzes"),
    ("ano", "anos"),
    ("lo", "los"),
    ("to", "tos"),
    ("oo", "oos"),
    ("o", "oes"),
    ("x", "xes"),
    // Upper-case abbreviations (acronyms come out upper-cased, see `words`).
    ("S", "Ses"),
];

/// flect v1.0.3's acronyms, as it stores them. It looks them up by the upper-cased word, so
/// the entries with lower-case letters never match; they are listed for completeness.
const ACRONYMS: &[&str] = &[
    "OK", "UTF8", "HTML", "JSON", "JWT", "ID", "UUID", "SQL", "ACK", "ACL", "ADSL", "AES", "ANSI",
    "API", "ARP", "ATM", "BGP", "BSS", "CCITT", "CHAP", "CIDR", "CIR", "CLI", "CPE", "CPU", "CRC",
    "CRT", "CSMA", "CMOS", "DCE", "DEC", "DES", "DHCP", "DNS", "DRAM", "DSL", "DSLAM", "DTE",
    "DMI", "EHA", "EIA", "EIGRP", "EOF", "ESS", "FCC", "FCS", "FDDI", "FTP", "GBIC", "gbps",
    "GEPOF", "HDLC", "HTTP", "HTTPS", "IANA", "ICMP", "IDF", "IDS", "IEEE", "IETF", "IMAP", "IP",
    "IPS", "ISDN", "ISP", "kbps", "LACP", "LAN", "LAPB", "LAPF", "LLC", "MAC", "Mbps", "MC", "MDF",
    "MIB", "MoCA", "MPLS", "MTU", "NAC", "NAT", "NBMA", "NIC", "NRZ", "NRZI", "NVRAM", "OSI",
    "OSPF", "OUI", "PAP", "PAT", "PC", "PIM", "PCM", "PDU", "POP3", "POTS", "PPP", "PPTP", "PTT",
    "PVST", "RAM", "RARP", "RFC", "RIP", "RLL", "ROM", "RSTP", "RTP", "RCP", "SDLC", "SFD", "SFP",
    "SLARP", "SLIP", "SMTP", "SNA", "SNAP", "SNMP", "SOF", "SRAM", "SSH", "SSID", "STP", "SYN",
    "TDM", "TFTP", "TIA", "TOFU", "UDP", "URL", "URI", "USB", "UTP", "VC", "VLAN", "VLSM", "VPN",
    "W3C", "WAN", "WEP", "WiFi", "WPA", "WWW",
];

/// The plural of `text` exactly as flect v1.0.3's `Pluralize` gives it (see the module doc).
pub(crate) fn pluralize(text: &str) -> String {
    let words = words(text);
    let Some(last) = words.last() else {
        return String::new();
    };
    if let Some(plural) = dictionary_plural(text) {
        return plural.to_owned();
    }
    if is_recognised_plural(text) {
        return text.to_owned();
    }
    let lower = lower_case(last);
    if is_recognised_plural(&lower) {
        return text.to_owned();
    }
    if let Some(plural) = dictionary_plural(&lower) {
        let plural = if starts_capitalised(last) {
            capitalise(plural)
        } else {
            plural.to_owned()
        };
        return replace_suffix(text, last, &plural);
    }
    for (ending, plural_ending) in suffix_rules() {
        if let Some(stem) = last.strip_suffix(ending) {
            return match plural_ending {
                None => replace_suffix(text, last, last),
                Some(plural_ending) => {
                    replace_suffix(text, last, &format!("{stem}{plural_ending}"))
                }
            };
        }
    }
    if lower.ends_with('s') {
        return text.to_owned();
    }
    format!("{text}s")
}

/// The suffix rules in the order flect tries them: the dictionary's (all but whole-word
/// entries, last entry first), then [`SUFFIXES`]. Each yields its plural ending with `None`
/// (keep the word) and then its singular ending with the plural ending to put instead.
fn suffix_rules() -> impl Iterator<Item = (&'static str, Option<&'static str>)> {
    let dictionary = DICTIONARY
        .iter()
        .rev()
        .filter(|word| !word.whole_word_only)
        .map(|word| (word.singular, word.plural));
    dictionary
        .chain(SUFFIXES.iter().copied())
        .flat_map(|(singular, plural)| [(plural, None), (singular, Some(plural))])
}

fn dictionary_plural(word: &str) -> Option<&'static str> {
    DICTIONARY
        .iter()
        .find(|entry| entry.singular == word)
        .map(|entry| entry.plural)
}

fn is_recognised_plural(word: &str) -> bool {
    DICTIONARY
        .iter()
        .any(|entry| entry.recognised_plurals().any(|plural| plural == word))
}

fn is_acronym(word: &str) -> bool {
    let upper = upper_case(word);
    ACRONYMS.contains(&upper.as_str())
}

/// flect's "replace suffix": `text` without `old` at its end (when it ends so), then `new`.
fn replace_suffix(text: &str, old: &str, new: &str) -> String {
    let stem = text.strip_suffix(old).unwrap_or(text);
    format!("{stem}{new}")
}

/// The words of `text` as flect cuts them: at separators (`_`, space, `:`, `-`, `/`, other
/// white space), before an upper-case letter that follows a non-upper-case character or ends
/// an acronym, and at characters that are neither letters, digits, punctuation nor a backtick
/// (those are dropped). Each word is trimmed of white space and separators, and upper-cased
/// when it is an acronym; empty words are dropped. A whole text that is an acronym is one
/// upper-cased word.
fn words(text: &str) -> Vec<String> {
    let text = text.trim();
    if text.is_empty() {
        return Vec::new();
    }
    if is_acronym(text) {
        return vec![upper_case(text)];
    }
    let mut words = Vec::new();
    let mut current = String::new();
    let mut previous: Option<char> = None;
    for c in text.chars() {
        let starts_word = is_separator(c)
            || (c.is_uppercase()
                && (!previous.is_some_and(char::is_uppercase) || is_acronym(&current)));
        if starts_word {
            push_word(&mut words, &current);
            current.clear();
            current.push(c);
        } else if c.is_alphanumeric() || is_punctuation(c) || c == '`' {
            current.push(c);
        } else {
            push_word(&mut words, &current);
            current.clear();
        }
        previous = Some(c);
    }
    push_word(&mut words, &current);
    words
}

fn push_word(words: &mut Vec<String>, word: &str) {
    let mut word = word.trim();
    for separator in ['_', ' ', ':', '-', '/'] {
        word = word.trim_matches(separator);
    }
    if word.is_empty() {
        return;
    }
    words.push(if is_acronym(word) {
        upper_case(word)
    } else {
        word.to_owned()
    });
}

fn is_separator(c: char) -> bool {
    matches!(c, '_' | ' ' | ':' | '-' | '/') || c.is_whitespace()
}

/// Go's punctuation category on ASCII (its symbols `$+<=>^`|~` are not punctuation); other
/// characters that are neither letters, digits nor white space count as punctuation.
fn is_punctuation(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_punctuation()
            && !matches!(c, '$' | '+' | '<' | '=' | '>' | '^' | '`' | '|' | '~')
    } else {
        !c.is_alphanumeric() && !c.is_whitespace()
    }
}

/// Upper-cases character by character, keeping a character whose upper case is not one
/// character (as Go's simple case mapping does).
fn upper_case(word: &str) -> String {
    word.chars()
        .map(|c| single(c.to_uppercase()).unwrap_or(c))
        .collect()
}

/// Lower-cases character by character, as [`upper_case`] does.
fn lower_case(word: &str) -> String {
    word.chars()
        .map(|c| single(c.to_lowercase()).unwrap_or(c))
        .collect()
}

fn single(mut chars: impl Iterator<Item = char>) -> Option<char> {
    let first = chars.next()?;
    chars.next().is_none().then_some(first)
}

/// Whether capitalising `word` leaves it unchanged.
fn starts_capitalised(word: &str) -> bool {
    capitalise(word) == word
}

fn capitalise(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => single(first.to_uppercase()).unwrap_or(first).to_string() + chars.as_str(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Answers of flect v1.0.3 itself (the differential test in `tests/plurals.rs` compares
    /// hundreds more when Go is installed).
    #[test]
    fn plurals_are_flects() {
        let cases = [
            ("webapp", "webapps"),
            ("policy", "policies"),
            ("gateway", "gateways"),
            ("ingress", "ingresses"),
            ("status", "statuses"),
            ("redis", "redis"),
            ("postgres", "postgres"),
            ("nats", "nats"),
            ("metrics", "metrics"),
            ("rdspostgres", "rdspostgres"),
            ("box", "boxes"),
            ("ox", "oxen"),
            ("index", "indices"),
            ("person", "people"),
            ("salesperson", "salespeople"),
            ("human", "humans"),
            ("woman", "women"),
            ("metadata", "metadata"),
            ("datum", "data"),
            ("medium", "media"),
            ("media", "media"),
            ("fish", "fish"),
            ("knife", "knives"),
            ("photo", "photos"),
            ("hero", "heroes"),
            ("quiz", "quizzes"),
            ("api", "apis"),
            ("ip", "ips"),
            ("id", "ids"),
            ("dns", "dnsDNSes"),
            ("ids", "idsIDSes"),
            ("", ""),
        ];
        for (singular, plural) in cases {
            assert_eq!(pluralize(singular), plural, "{singular}");
        }
    }

    #[test]
    fn only_the_last_word_is_pluralised() {
        assert_eq!(pluralize("my-app"), "my-apps");
        assert_eq!(pluralize("my_ox"), "my_oxen");
        assert_eq!(pluralize("WebApp"), "WebApps");
        assert_eq!(pluralize("Person"), "People");
    }

    #[test]
    fn words_split_like_flect() {
        assert_eq!(words("APIServer"), ["API", "Server"]);
        assert_eq!(words("my-api"), ["my", "API"]);
        assert_eq!(words("a+b"), ["a", "b"]);
        assert_eq!(words(" -- "), Vec::<String>::new());
    }
}

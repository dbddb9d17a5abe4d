"""The PGP word list (the "biometric word list").

Two parallel lists of 256 words each, designed in 1995 by Patrick Juola and
Philip Zimmermann for reading binary data aloud unambiguously; see Patrick Juola
and Philip Zimmermann, "Whole-Word Phonetic Distances and the PGPfone Alphabet",
ICSLP 1996. The words were later refined for PGP, which uses them for key
fingerprints; ZRTP uses them for its short authentication string.

``EVEN[b]`` is the word for byte value ``b`` (0x00..0xFF) at an even position
(0, 2, 4, ...) of a byte string, and ``ODD[b]`` is the word at an odd position
(1, 3, 5, ...). EVEN holds two-syllable words and ODD holds three-syllable
words, so a dropped, repeated or swapped word is noticed when the words are read
aloud.

Source: copied from github.com/warrenguy/javascript-pgp-word-list, file
``pgp-word-list.js`` (MIT; "the word list itself belongs to PGP Corporation").
It was checked word for word and in byte order against two independent copies:
github.com/btcsuite/btcwallet ``pgpwordlist/wordlist.go`` and
github.com/opentelecoms-org/zrtp-java ``src/zorg/ZrtpStrings.java`` (a ZRTP
implementation; ``PGP_WORDS_EVEN`` / ``PGP_WORDS_ODD``). The canonical list
capitalises proper nouns (e.g. "Algol", "Pluto", "Yucatan"). Here every word is
lower-cased.
"""

# fmt: off
EVEN: tuple[str, ...] = (
    "aardvark", "absurd", "accrue", "acme",  # 0x00
    "adrift", "adult", "afflict", "ahead",  # 0x04
    "aimless", "algol", "allow", "alone",  # 0x08
    "ammo", "ancient", "apple", "artist",  # 0x0C
    "assume", "athens", "atlas", "aztec",  # 0x10
    "baboon", "backfield", "backward", "banjo",  # 0x14
    "beaming", "bedlamp", "beehive", "beeswax",  # 0x18
    "befriend", "belfast", "berserk", "billiard",  # 0x1C
    "bison", "blackjack", "blockade", "blowtorch",  # 0x20
    "bluebird", "bombast", "bookshelf", "brackish",  # 0x24
    "breadline", "breakup", "brickyard", "briefcase",  # 0x28
    "burbank", "button", "buzzard", "cement",  # 0x2C
    "chairlift", "chatter", "checkup", "chisel",  # 0x30
    "choking", "chopper", "christmas", "clamshell",  # 0x34
    "classic", "classroom", "cleanup", "clockwork",  # 0x38
    "cobra", "commence", "concert", "cowbell",  # 0x3C
    "crackdown", "cranky", "crowfoot", "crucial",  # 0x40
    "crumpled", "crusade", "cubic", "dashboard",  # 0x44
    "deadbolt", "deckhand", "dogsled", "dragnet",  # 0x48
    "drainage", "dreadful", "drifter", "dropper",  # 0x4C
    "drumbeat", "drunken", "dupont", "dwelling",  # 0x50
    "eating", "edict", "egghead", "eightball",  # 0x54
    "endorse", "endow", "enlist", "erase",  # 0x58
    "escape", "exceed", "eyeglass", "eyetooth",  # 0x5C
    "facial", "fallout", "flagpole", "flatfoot",  # 0x60
    "flytrap", "fracture", "framework", "freedom",  # 0x64
    "frighten", "gazelle", "geiger", "glitter",  # 0x68
    "glucose", "goggles", "goldfish", "gremlin",  # 0x6C
    "guidance", "hamlet", "highchair", "hockey",  # 0x70
    "indoors", "indulge", "inverse", "involve",  # 0x74
    "island", "jawbone", "keyboard", "kickoff",  # 0x78
    "kiwi", "klaxon", "locale", "lockup",  # 0x7C
    "merit", "minnow", "miser", "mohawk",  # 0x80
    "mural", "music", "necklace", "neptune",  # 0x84
    "newborn", "nightbird", "oakland", "obtuse",  # 0x88
    "offload", "optic", "orca", "payday",  # 0x8C
    "peachy", "pheasant", "physique", "playhouse",  # 0x90
    "pluto", "preclude", "prefer", "preshrunk",  # 0x94
    "printer", "prowler", "pupil", "puppy",  # 0x98
    "python", "quadrant", "quiver", "quota",  # 0x9C
    "ragtime", "ratchet", "rebirth", "reform",  # 0xA0
    "regain", "reindeer", "rematch", "repay",  # 0xA4
    "retouch", "revenge", "reward", "rhythm",  # 0xA8
    "ribcage", "ringbolt", "robust", "rocker",  # 0xAC
    "ruffled", "sailboat", "sawdust", "scallion",  # 0xB0
    "scenic", "scorecard", "scotland", "seabird",  # 0xB4
    "select", "sentence", "shadow", "shamrock",  # 0xB8
    "showgirl", "skullcap", "skydive", "slingshot",  # 0xBC
    "slowdown", "snapline", "snapshot", "snowcap",  # 0xC0
    "snowslide", "solo", "southward", "soybean",  # 0xC4
    "spaniel", "spearhead", "spellbind", "spheroid",  # 0xC8
    "spigot", "spindle", "spyglass", "stagehand",  # 0xCC
    "stagnate", "stairway", "standard", "stapler",  # 0xD0
    "steamship", "sterling", "stockman", "stopwatch",  # 0xD4
    "stormy", "sugar", "surmount", "suspense",  # 0xD8
    "sweatband", "swelter", "tactics", "talon",  # 0xDC
    "tapeworm", "tempest", "tiger", "tissue",  # 0xE0
    "tonic", "topmost", "tracker", "transit",  # 0xE4
    "trauma", "treadmill", "trojan", "trouble",  # 0xE8
    "tumor", "tunnel", "tycoon", "uncut",  # 0xEC
    "unearth", "unwind", "uproot", "upset",  # 0xF0
    "upshot", "vapor", "village", "virus",  # 0xF4
    "vulcan", "waffle", "wallet", "watchword",  # 0xF8
    "wayside", "willow", "woodlark", "zulu",  # 0xFC
)
# fmt: on

# fmt: off
ODD: tuple[str, ...] = (
    "adroitness", "adviser", "aftermath", "aggregate",  # 0x00
    "alkali", "almighty", "amulet", "amusement",  # 0x04
    "antenna", "applicant", "apollo", "armistice",  # 0x08
    "article", "asteroid", "atlantic", "atmosphere",  # 0x0C
    "autopsy", "babylon", "backwater", "barbecue",  # 0x10
    "belowground", "bifocals", "bodyguard", "bookseller",  # 0x14
    "borderline", "bottomless", "bradbury", "bravado",  # 0x18
    "brazilian", "breakaway", "burlington", "businessman",  # 0x1C
    "butterfat", "camelot", "candidate", "cannonball",  # 0x20
    "capricorn", "caravan", "caretaker", "celebrate",  # 0x24
    "cellulose", "certify", "chambermaid", "cherokee",  # 0x28
    "chicago", "clergyman", "coherence", "combustion",  # 0x2C
    "commando", "company", "component", "concurrent",  # 0x30
    "confidence", "conformist", "congregate", "consensus",  # 0x34
    "consulting", "corporate", "corrosion", "councilman",  # 0x38
    "crossover", "crucifix", "cumbersome", "customer",  # 0x3C
    "dakota", "decadence", "december", "decimal",  # 0x40
    "designing", "detector", "detergent", "determine",  # 0x44
    "dictator", "dinosaur", "direction", "disable",  # 0x48
    "disbelief", "disruptive", "distortion", "document",  # 0x4C
    "embezzle", "enchanting", "enrollment", "enterprise",  # 0x50
    "equation", "equipment", "escapade", "eskimo",  # 0x54
    "everyday", "examine", "existence", "exodus",  # 0x58
    "fascinate", "filament", "finicky", "forever",  # 0x5C
    "fortitude", "frequency", "gadgetry", "galveston",  # 0x60
    "getaway", "glossary", "gossamer", "graduate",  # 0x64
    "gravity", "guitarist", "hamburger", "hamilton",  # 0x68
    "handiwork", "hazardous", "headwaters", "hemisphere",  # 0x6C
    "hesitate", "hideaway", "holiness", "hurricane",  # 0x70
    "hydraulic", "impartial", "impetus", "inception",  # 0x74
    "indigo", "inertia", "infancy", "inferno",  # 0x78
    "informant", "insincere", "insurgent", "integrate",  # 0x7C
    "intention", "inventive", "istanbul", "jamaica",  # 0x80
    "jupiter", "leprosy", "letterhead", "liberty",  # 0x84
    "maritime", "matchmaker", "maverick", "medusa",  # 0x88
    "megaton", "microscope", "microwave", "midsummer",  # 0x8C
    "millionaire", "miracle", "misnomer", "molasses",  # 0x90
    "molecule", "montana", "monument", "mosquito",  # 0x94
    "narrative", "nebula", "newsletter", "norwegian",  # 0x98
    "october", "ohio", "onlooker", "opulent",  # 0x9C
    "orlando", "outfielder", "pacific", "pandemic",  # 0xA0
    "pandora", "paperweight", "paragon", "paragraph",  # 0xA4
    "paramount", "passenger", "pedigree", "pegasus",  # 0xA8
    "penetrate", "perceptive", "performance", "pharmacy",  # 0xAC
    "phonetic", "photograph", "pioneer", "pocketful",  # 0xB0
    "politeness", "positive", "potato", "processor",  # 0xB4
    "provincial", "proximate", "puberty", "publisher",  # 0xB8
    "pyramid", "quantity", "racketeer", "rebellion",  # 0xBC
    "recipe", "recover", "repellent", "replica",  # 0xC0
    "reproduce", "resistor", "responsive", "retraction",  # 0xC4
    "retrieval", "retrospect", "revenue", "revival",  # 0xC8
    "revolver", "sandalwood", "sardonic", "saturday",  # 0xCC
    "savagery", "scavenger", "sensation", "sociable",  # 0xD0
    "souvenir", "specialist", "speculate", "stethoscope",  # 0xD4
    "stupendous", "supportive", "surrender", "suspicious",  # 0xD8
    "sympathy", "tambourine", "telephone", "therapist",  # 0xDC
    "tobacco", "tolerance", "tomorrow", "torpedo",  # 0xE0
    "tradition", "travesty", "trombonist", "truncated",  # 0xE4
    "typewriter", "ultimate", "undaunted", "underfoot",  # 0xE8
    "unicorn", "unify", "universe", "unravel",  # 0xEC
    "upcoming", "vacancy", "vagabond", "vertigo",  # 0xF0
    "virginia", "visitor", "vocalist", "voyager",  # 0xF4
    "warranty", "waterloo", "whimsical", "wichita",  # 0xF8
    "wilmington", "wyoming", "yesteryear", "yucatan",  # 0xFC
)
# fmt: on

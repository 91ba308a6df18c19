package classifier

// The read-only programs and their complete option grammars (see
// grammar.go). An option missing here makes the call dangerous, so a
// grammar may be smaller than the program's, never larger than what is
// known to be read-only. Options marked "!" write a file or run a
// program. Written from the programs' manuals (GNU coreutils 9, util-linux
// 2.38, procps 4, binutils 2.40, ripgrep 14, jq 1.7, bash 5.2).

func (g *grammar) num() *grammar   { g.digits = true; return g }
func (g *grammar) resp() *grammar  { g.respFile, g.risky = true, true; return g }
func (g *grammar) any() *grammar   { g.anyArgs = true; return g }
func (g *grammar) exact() *grammar { g.abbrev = false; return g }
func (g *grammar) because(why string) *grammar {
	g.why = why
	return g
}
func (g *grammar) ops(n int) *grammar {
	g.maxOps, g.risky = n, true
	return g
}

// checksum is the grammar of md5sum and the sha*sum family.
const checksumLong = "binary check tag text ignore-missing quiet status strict warn zero"

const lsShort = "aAbBcCdDfFgGhHiI:klLmnNopqQrRsStT:uUvw:xXZ1"
const lsLong = "all almost-all author escape block-size= ignore-backups color? directory dired classify? " +
	"file-type format= full-time group-directories-first no-group human-readable si " +
	"dereference-command-line dereference-command-line-symlink-to-dir hide= hyperlink? " +
	"indicator-style= inode ignore= kibibytes dereference literal numeric-uid-gid hide-control-chars " +
	"show-control-chars quote-name quoting-style= reverse recursive size sort= time= time-style= " +
	"tabsize= width= context zero"

const grepLong = "extended-regexp fixed-strings basic-regexp perl-regexp regexp= file= ignore-case no-ignore-case " +
	"word-regexp line-regexp null-data no-messages invert-match max-count= byte-offset line-number " +
	"no-line-number line-buffered with-filename no-filename label= only-matching quiet silent " +
	"binary-files= text directories= devices= recursive dereference-recursive include= exclude= " +
	"exclude-from= exclude-dir= files-without-match files-with-matches count initial-tab null " +
	"before-context= after-context= context= color? colour? binary"

const rgLong = "after-context= before-context= context= context-separator= no-context-separator count " +
	"count-matches color= colors= column no-column crlf no-crlf debug trace dfa-size-limit= encoding= no-encoding engine= " +
	"field-context-separator= field-match-separator= file= files files-with-matches files-without-match " +
	"fixed-strings no-fixed-strings follow no-follow glob= glob-case-insensitive no-glob-case-insensitive " +
	"heading no-heading hidden no-hidden iglob= ignore-case ignore-file= ignore-file-case-insensitive " +
	"no-ignore-file-case-insensitive include-zero no-include-zero invert-match no-invert-match json " +
	"no-json line-buffered no-line-buffered line-number no-line-number line-regexp max-columns= " +
	"max-columns-preview no-max-columns-preview max-count= max-depth= maxdepth= max-filesize= mmap no-mmap " +
	"multiline no-multiline multiline-dotall no-multiline-dotall no-config no-ignore ignore no-ignore-dot " +
	"ignore-dot no-ignore-exclude ignore-exclude no-ignore-files ignore-files no-ignore-global " +
	"ignore-global no-ignore-messages ignore-messages no-ignore-parent ignore-parent no-ignore-vcs " +
	"ignore-vcs no-messages messages no-pcre2-unicode pcre2-unicode no-require-git require-git " +
	"no-unicode unicode null null-data one-file-system no-one-file-system only-matching " +
	"path-separator= passthru passthrough pcre2 no-pcre2 pcre2-version pretty quiet regex-size-limit= regexp= " +
	"replace= smart-case sort= sortr= sort-files no-sort-files stats no-stats " +
	"stop-on-nonmatch text no-text threads= trim no-trim type= type-not= type-add= type-clear= " +
	"type-list unrestricted vimgrep with-filename no-filename word-regexp auto-hybrid-regex " +
	"no-auto-hybrid-regex binary no-binary block-buffered no-block-buffered byte-offset " +
	"no-byte-offset case-sensitive hyperlink-format= no-pre no-search-zip files-without-match help version " +
	"!pre= !pre-glob= !search-zip !hostname-bin= generate="

const diffLong = "normal brief report-identical-files context? unified? ed rcs side-by-side width= " +
	"left-column suppress-common-lines show-c-function show-function-line= label= expand-tabs " +
	"initial-tab tabsize= suppress-blank-empty paginate ignore-case ignore-file-name-case " +
	"no-ignore-file-name-case ignore-tab-expansion ignore-trailing-space ignore-space-change " +
	"ignore-all-space ignore-blank-lines ignore-matching-lines= strip-trailing-cr text new-file " +
	"unidirectional-new-file recursive no-dereference exclude= exclude-from= starting-file= " +
	"from-file= to-file= minimal horizon-lines= speed-large-files old-line-format= " +
	"new-line-format= unchanged-line-format= line-format= old-group-format= new-group-format= " +
	"unchanged-group-format= changed-group-format= ifdef= color? palette= binary"

const binutilsLong = "target= help version"

func addReadOnly() {
	// Bash builtins and programs without options: every word is an
	// operand that is only printed or ignored.
	readOnly(parseGrammar("", "").any(), "echo", "true", "false", ":", "expr", "yes")
	readOnly(builtinG("fn"), "wait") // not -p VAR: it assigns (and evaluates a subscript)
	readOnly(builtinG(""), "times", "exit", "return", "logout")
	readOnly(builtinG("dms"), "help")
	readOnly(builtinG("clpv").num(), "dirs")
	readOnly(builtinG("afptP"), "type")
	readOnly(builtinG("LP"), "pwd")

	// GNU coreutils.
	readOnly(gnu("AbeEnstTuv", "show-all number-nonblank show-ends number squeeze-blank show-tabs show-nonprinting"), "cat")
	readOnly(gnu("brs:", "before regex separator="), "tac")
	readOnly(gnu("c:n:qvz", "bytes= lines= quiet silent verbose zero-terminated").num(), "head")
	readOnly(gnu("c:fFn:qs:vz", "bytes= follow? lines= max-unchanged-stats= pid= quiet silent retry sleep-interval= verbose zero-terminated debug").num(), "tail")
	readOnly(gnu("clLmw", "bytes chars lines files0-from= max-line-length words total= debug"), "wc")
	readOnly(gnu("b:d:f:h:i:l:n:ps:v:w:", "body-numbering= section-delimiter= footer-numbering= header-numbering= line-increment= join-blank-lines= number-format= no-renumber number-separator= starting-line-number= number-width="), "nl")
	readOnly(gnu("A:j:N:t:vw::S::abcdfilosxDeFhHILOX", "address-radix= skip-bytes= read-bytes= format= output-duplicates strings? width? traditional endian=").num(), "od")
	readOnly(gnu("c:fLt", "dereference file-system format= printf= terse cached="), "stat")
	readOnly(gnu("b:c:d:f:nsz", "bytes= characters= delimiter= fields= complement only-delimited output-delimiter= zero-terminated"), "cut")
	readOnly(gnu("d:sz", "delimiters= serial zero-terminated"), "paste")
	readOnly(gnu("cCdst", "complement delete squeeze-repeats truncate-set1"), "tr")
	readOnly(gnu("bsw:", "bytes spaces width=").num(), "fold")
	readOnly(gnu("cstuw:p:g:", "crown-margin prefix= split-only tagged-paragraph uniform-spacing width= goal=").num(), "fmt")
	readOnly(gnu("it:", "initial tabs=").num(), "expand")
	readOnly(gnu("at:", "all first-only tabs=").num(), "unexpand")
	readOnly(gnu("123z", "check-order nocheck-order output-delimiter= total zero-terminated"), "comm")
	readOnly(gnu("a:e:ij:o:t:v:1:2:z", "ignore-case check-order nocheck-order header zero-terminated"), "join")
	readOnly(gnu("bi:ln:s", "print-bytes ignore-initial= verbose bytes= quiet silent"), "cmp")
	readOnly(gnu("abBcC:dD:eEfF:hiI:lL:nNpqrsS:tTuU:vwW:x:X:yZ", diffLong).num(), "diff")
	readOnly(gnu("bctwz", checksumLong), "md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum")
	readOnly(gnu("bcl:twz", checksumLong+" length="), "b2sum")
	readOnly(gnu("a:bcl:twz", checksumLong+" algorithm= base64 length= raw untagged debug"), "cksum")
	readOnly(gnu("rs", "sysv"), "sum")
	readOnly(gnu("diw:", "decode ignore-garbage wrap=").ops(1).because("write a file"), "base32", "base64")
	readOnly(gnu("eEmLPqsz", "canonicalize-existing canonicalize-missing logical physical quiet relative-to= relative-base= strip no-symlinks zero"), "realpath")
	readOnly(gnu("efmnqsvz", "canonicalize canonicalize-existing canonicalize-missing no-newline quiet silent verbose zero"), "readlink")
	readOnly(gnu("as:z", "multiple suffix= zero"), "basename")
	readOnly(gnu("z", "zero"), "dirname")
	readOnly(gnu(lsShort, lsLong), "ls", "dir", "vdir")
	readOnly(gnu("A:B:C:D:EFGHIPTUVZabcd:e:f:hilLm:noqrRsuvwxyz", grepLong).num(), "grep", "egrep", "fgrep")
	readOnly(gnu("", ""), "whoami", "logname", "users", "tsort", "arch", "sleep")
	readOnly(gnu("agGnrzZu", "context group groups name real user zero"), "id")
	readOnly(gnu("", ""), "groups")
	readOnly(gnu("asnrvmpio", "all kernel-name nodename kernel-release kernel-version machine processor hardware-platform operating-system"), "uname")
	readOnly(gnu("", "all ignore="), "nproc")
	readOnly(gnu("0", "null"), "printenv")
	readOnly(gnu("s", "silent quiet"), "tty")
	readOnly(gnu("abdHlmpqrsTtuw", "all boot dead heading ips login lookup message mesg writable process count runlevel short time users"), "who")
	readOnly(gnu("aB:hHiklPt:Tvx:", "all block-size= human-readable si inodes local no-sync output? portability sync total type= print-type exclude-type="), "df")
	readOnly(gnu("0abB:cDd:HhkLlmPSst:xX:", "null all apparent-size block-size= bytes total dereference-args max-depth= human-readable inodes dereference count-links no-dereference separate-dirs si summarize threshold= time? time-style= exclude-from= exclude= one-file-system files0-from="), "du")
	readOnly(gnu("f:s:w", "format= separator= equal-width").num(), "seq")
	readOnly(gnu("d:z", "debug delimiter= field= format= from= from-unit= grouping header? invalid= padding= round= suffix= to= to-unit= unit-separator= zero-terminated"), "numfmt")
	readOnly(gnu("h", "exponents"), "factor")
	readOnly(gnu("acdD:e::Ffh:i::Jl:mn::N:o:rs::S::tTvw:W:", "pages= columns= across show-control-chars double-space date-format= expand-tabs? form-feed header= output-tabs? join-lines length= merge number-lines? first-line-number= indent= no-file-warnings separator? sep-string? omit-header omit-pagination show-nonprinting width= page-width=").num(), "pr")
	readOnly(gnu("bcp", "sh bourne-shell csh c-shell print-database print-ls-colors"), "dircolors")
	readOnly(gnu("pP", "portability"), "pathchk")
	readOnly(gnu("av:", "all"), "getconf")
	readOnly(gnu("acmkv", "all-locales charmaps category-name keyword-name verbose"), "locale")
	readOnly(gnu("bcCdfghik:mMn!o:RrsS:t:T:uVz", "ignore-leading-blanks dictionary-order ignore-case general-numeric-sort ignore-nonprinting month-sort human-numeric-sort numeric-sort random-sort random-source= reverse sort= version-sort batch-size= check? debug files0-from= key= merge stable buffer-size= field-separator= temporary-directory= unique parallel= zero-terminated !output= !compress-program=").because("write a file or run a program").num(), "sort")
	readOnly(gnu("ei:n:!o:rz", "echo input-range= head-count= !output= random-source= repeat zero-terminated").because("write a file"), "shuf")
	readOnly(gnu("cdDf:is:uw:z", "count repeated all-repeated? skip-fields= ignore-case skip-chars= unique zero-terminated check-chars= group?").num().ops(1).because("write a file"), "uniq")
	readOnly(gnu("cf:l!o:st:", "from-code= to-code= list !output= silent verbose").because("write a file"), "iconv")

	// util-linux, procps and friends.
	readOnly(gnu("0", "zero"), "rev")
	readOnly(gnu("c:deEH:i:Jl:Ln:N:o:O:p:r:R:s:tT:W:x", "output-width= table-noheadings table-header-repeat table-noextreme= table-hide= tree-id= json table-columns-limit= keep-empty-lines table-name= table-columns= table-column= output-separator= table-order= tree-parent= tree= table-right= separator= table table-truncate= table-wrap= fillrows"), "column")
	readOnly(gnu("bcCdoxe:f:n:s:vL::", "one-byte-octal one-byte-char one-byte-hex canonical two-bytes-decimal two-bytes-octal two-bytes-hex format= format-file= length= skip= no-squeezing color?"), "hexdump")
	// lsof: every letter may take a value; a separate value is read as an
	// operand (a file name), which lsof only inspects.
	readOnly(gnu("?::a::b::c::C::d::D::e::E::f::F::g::G::h::i::I::k::K::l::L::m::M::n::N::o::O::p::P::Q::r::R::s::S::t::T::u::U::v::V::w::x::X::z::0::", "").exact(), "lsof")
	readOnly(gnu("bdft:a", "alternative alphanum ignore-case terminate="), "look")
	readOnly(gnu("!C!c!D!E!n:dF:f:HhkL::l:PprSs:TtuwWxe", "buffer-size= !clear color? !console-level= !console-off !console-on decode ctime file= follow follow-new human kernel level= noescape nopager notime raw !read-clear show-delta since= syslog time-format= until= userspace facility= force-prefix json").because("change the kernel log"), "dmesg")
	readOnly(gnu("psV", "pretty since container-clock raw"), "uptime")
	readOnly(gnu("bkmghlLtvwc:s:", "bytes kilo mega giga tera peta kibi mebi gibi tebi pebi human lohi line total committed seconds= count= wide si"), "free")
	readOnly(gnu("aAcCdeEfFgGhHjlLmMnNrsSTuvVwxXyZC:G:g:o:O:p:q:s:t:u:U:k:", "format= sort= pid= ppid= tty= user= group= cols= columns= lines= rows= headers no-headers forest context deselect cumulative width= Group= User= sid= quick-pid= info signames").exact(), "ps")
	readOnly(gnu("acd:fF:g:G:ilnoOP:r:s:t:u:U:vwxA", "count delimiter= full group= inverse lightweight list-name list-full newest oldest older= parent= pidfile= logpidfile runstates= session= terminal= euid= uid= exact ns= nslist= cgroup= env= ignore-case ignore-ancestors require-handler"), "pgrep")
	readOnly(gnu("scnqwxzo:", ""), "pidof")
	readOnly(gnu("afmnsdDwtSp:S:y", "active forks slabs one-header stats disk disk-sum partition= unit= timestamp wide no-first"), "vmstat")
	readOnly(gnu("cdhHkmNtVxyzsj:g:o:p::", "human pretty dec= compact"), "iostat")
	readOnly(gnu("AnTuI:P:o:", "dec="), "mpstat")
	readOnly(gnu("abdDe:fI:JlmMnNo:OpPrsSTtuxyzQ:E:w:", "all bytes nodeps discard noempty exclude= fs include= json list tree merge noheadings output= output-all paths pairs raw inverse topology scsi sort= width= ascii zoned sysroot= nvme virtio dedup= filter= highlight= ct= ct-filter= list-columns"), "lsblk")
	readOnly(gnu("abcepxyJrs:", "all online offline bytes caches? extended? json parse? sysroot= hex physical output-all raw"), "lscpu")
	readOnly(gnu("aJno:PrsS:b", "all bytes json noheadings output= output-all pairs raw split= sysroot= summary?"), "lsmem")
	readOnly(gnu("Jlno:pPrt:uW", "json list noheadings output= output-all persistent task= notruncate nowrap raw type= tree? filter="), "lsns")
	readOnly(gnu("mtvknxbsDPi:p:A:O:H:F:MqQGkUd:", ""), "lspci")
	readOnly(gnu("vs:D:tV", "verbose tree"), "lsusb")
	readOnly(gnu("13A:B:cd:jJmMn:S:svwyYr", "one three after= before= color? columns= iso julian months= reform= sunday monday span week? year twelve vertical"), "cal", "ncal")
	readOnly(gnu("bmsuBMSfl", "").exact(), "whereis")
	readOnly(gnu("as", "all silent skip-alias skip-functions skip-dot skip-tilde show-dot show-tilde read-alias read-functions tty-only"), "which")

	// Decompressing readers: they only write to standard output.
	readOnly(gnu("cfhlLqrS:tvV", "force list license quiet recursive suffix= test verbose stdout to-stdout"), "zcat")
	readOnly(gnu("fkqsvLV", "force keep quiet small verbose license stdout"), "bzcat")
	readOnly(gnu("fkqQvhHVT:M:F:", "force keep quiet verbose no-warn single-stream no-sparse format= threads= memlimit= memory= robot stdout to-stdout files? files0?"), "xzcat")
	readOnly(parseGrammar("12CsmlvhMtTzx:", ""), "zipinfo")

	// jq has no I/O beyond reading its inputs; -f/-L read jq code.
	jq := parseGrammar("acCeMnrRsSjhVL:f:0", "slurp raw-input null-input compact-output tab indent= color-output monochrome-output ascii-output unbuffered stream stream-errors seq sort-keys raw-output raw-output0 join-output exit-status arg== argjson== slurpfile== rawfile== args jsonargs from-file= help version build-configuration")
	jq.permute = true
	readOnly(jq, "jq")

	// binutils: @FILE operands read more options (and could name a
	// --plugin, which loads a shared object).
	readOnly(gnu("afdn:t:e:owsT:U:", "all data bytes= radix= encoding= print-file-name include-all-whitespace output-separator= target= unicode="+" "+binutilsLong).num().resp(), "strings")
	readOnly(gnu("aABCDef:ghHjlnopPrsStuUvVX:", "debug-syms print-file-name format= demangle? no-demangle recurse-limit no-recurse-limit dynamic defined-only extern-only portability line-numbers numeric-sort no-sort print-armap reverse-sort radix= size-sort print-size special-syms synthetic undefined-only quiet with-symbol-versions without-symbol-versions ifunc-chars= unicode= export-symbols "+binutilsLong).resp(), "nm")
	readOnly(gnu("ab:CdDeEfgGhHiIj:lm:M:pP:rRsStTvVW::xzw", "archive-headers target= demangle? recurse-limit no-recurse-limit disassemble? disassemble-all disassemble-zeroes no-addresses endian= file-headers file-offsets file-start-context debugging debugging-tags section-headers headers info section= line-numbers source source-comment? architecture= disassembler-options= disassembler-color= private-headers private= reloc dynamic-reloc full-contents stabs syms dynamic-syms all-headers wide start-address= stop-address= prefix-addresses show-raw-insn no-show-raw-insn adjust-vma= dwarf? ctf? sframe? special-syms prefix= prefix-strip= insn-width= visualize-jumps? include= "+binutilsLong).resp(), "objdump")
	readOnly(gnu("aAcCdDeEghHIlLnNrsStTuUvVWx:p:R:w::z", "all file-header program-headers segments section-headers sections section-groups section-details headers syms symbols dyn-syms lto-syms sym-base= demangle? no-demangle recurse-limit no-recurse-limit notes relocs unwind dynamic version-info arch-specific archive-index use-dynamic hex-dump= string-dump= relocated-dump= decompress debug-dump? dwarf-depth= dwarf-start= ctf= sframe? histogram wide silent-truncation "+binutilsLong).resp(), "readelf")
	readOnly(gnu("ABGdfotx", "format= radix= common totals "+binutilsLong).resp(), "size")

	// Others.
	readOnly(gnu("bcdEhiIkLlNnrsSvzZ0e:F:f:m:P:!C", "brief checking-printout !compile debug exclude= exclude-quiet= extension files-from= separator= mime mime-type mime-encoding apple keep-going list magic-file= no-dereference dereference no-buffer no-pad print0 raw special-files uncompress uncompress-noreport parameter= no-sandbox").because("compile and write a magic file"), "file")
	tree := parseGrammar("aACdDfFghiJlnNpqQrsStuUvxX!RH:I:L:!o:P:T:", "help version inodes device noreport nolinks dirsfirst filesfirst filelimit= charset= du prune timefmt= si sort= gitignore gitfile= info infofile= fromfile fromtabfile metafirst matchdirs ignore-case hintro= houtro= fflinks condense hyperlink").because("write files")
	// tree takes the values of bundled letters from the next words:
	// -Lo 2 out is -L 2 -o out.
	tree.permute, tree.nextVals = true, true
	readOnly(tree, "tree")
	rg := parseGrammar("A:B:C:cd:E:e:f:Fg:hHiIj:lLm:M:nNopPqr:sSt:T:uUvVwx!z0ab", rgLong).because("run other programs")
	rg.permute = true
	readOnly(rg, "rg")
	readOnly(gnu("a:bcst0Uq", "algorithm= binary check text tag UNIVERSAL 01 status quiet warn strict ignore-missing"), "shasum")
	readOnly(parseGrammar("cpqrs:tx", ""), "sha1", "md5")
	readOnly(gnu("hiusfolpV", "no-header ip-addr no-current short from old-style pids"), "w")
	// fd (fdfind in Debian), fd 8-10: clap, so no abbreviations; -x/-X run
	// a program per match, -l runs ls.
	fd := parseGrammar("HIusigFaLp01qhVd:E:t:e:S:o:c:j:!x:!X:!l", "hidden no-hidden no-ignore ignore no-ignore-vcs ignore-vcs "+
		"no-ignore-parent no-global-ignore-file unrestricted case-sensitive ignore-case glob regex fixed-strings and= "+
		"absolute-path relative-path follow no-follow full-path print0 prune max-results= quiet show-errors "+
		"strip-cwd-prefix? one-file-system mount xdev no-require-git require-git hyperlink? max-depth= maxdepth= "+
		"min-depth= exact-depth= exclude= type= extension= size= changed-within= changed-before= change-newer-than= "+
		"newer= change-older-than= older= owner= format= batch-size= ignore-file= color= threads= max-buffer-time= "+
		"base-directory= path-separator= search-path= help version !list-details !exec= !exec-batch=").because("run other programs")
	fd.permute = true
	readOnly(fd, "fd", "fdfind")
}

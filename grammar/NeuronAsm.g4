// NeuronAsm: the nisa assembly language (docs/asm.md).
//
// The grammar is line oriented and knows no block structure: .if/.for/.macro bodies are
// matched and expanded by the tree walk in asm/, which keeps the grammar small and the
// parser fast (SLL prediction succeeds on every valid file).
grammar NeuronAsm;

program : line* EOF ;

// A line: an optional label, an optional statement, the end of the line.
// `name:` marks a point of the listing; `dve.name:` a point of one engine's stream;
// `.Lname:` a local label, unique to the macro expansion / loop iteration that defines it.
line : (label=(ID | DOTTED | DIRECTIVE) ':')? stmt? NL ;

stmt
  : '.kernel' name=ID                                                 # kernelStmt
  | '.target' name=ID                                                 # targetStmt
  | kind=('.param' | '.equ' | '.set') name=ID '=' expr                # assignStmt
  | '.if' expr                                                        # ifStmt
  | '.elif' expr                                                      # elifStmt
  | '.else'                                                           # elseStmt
  | '.endif'                                                          # endifStmt
  | '.for' var=ID kw=ID from=expr '..' to=expr (stepkw=ID step=expr)? # forStmt
  | '.endfor'                                                         # endforStmt
  | '.macro' name=ID (macroParam (COMMA macroParam)*)?                # macroStmt
  | '.endm'                                                           # endmStmt
  | '.include' STRING                                                 # includeStmt
  | '.error' STRING                                                   # errorStmt
  | kind=('.hbm' | '.sbuf' | '.psum') name=ID ':' dtype=ID
      '[' exprList? ']' role=ID? ('@' addr=expr)?                     # tensorStmt
  | '.view' name=ID '=' src=expr askw=ID dtype=ID '[' exprList? ']'   # viewStmt
  | '.sem' semDecl (COMMA semDecl)*                                   # semStmt
  | '.group' name=ID '=' expr                                         # groupStmt
  | kind=('.ranks' | '.lnc') expr                                     # launchStmt
  | DIRECTIVE (~NL)*                                                  # unknownDirective
  | DOTTED (operand (COMMA operand)*)? sync*                          # instStmt
  | ID (operand (COMMA operand)*)?                                    # macroCall
  ;

macroParam : name=ID ('=' expr)? ;
semDecl : name=ID ('=' expr)? ;

// `value` or `name=value`; written so that the decision is LL(1) (the walker checks `name`).
operand : lhs=expr ('=' rhs=expr)? ;

// @wait(s >= 3, t == 1) @signal(s) @signal(s += 2)
sync : '@' kind=ID '(' syncArg (COMMA syncArg)* ')' ;
// `sem >= n`, `sem == n`, `sem`, `sem += n` (LL(1); the walker checks which is which).
syncArg : lhs=expr ('+=' rhs=expr)? ;

exprList : expr (COMMA expr)* ;

expr
  : primary                                          # primaryExpr
  | expr '[' slice (COMMA slice)* ']'                # indexExpr
  | op=('-' | '+' | '!' | '~') expr                  # unaryExpr
  | expr op=('*' | '/' | '%') expr                   # binaryExpr
  | expr op=('+' | '-') expr                         # binaryExpr
  | expr op=('<<' | '>>') expr                       # binaryExpr
  | expr op=('<' | '<=' | '>' | '>=') expr           # binaryExpr
  | expr op=('==' | '!=') expr                       # binaryExpr
  | expr op='&' expr                                 # binaryExpr
  | expr op='^' expr                                 # binaryExpr
  | expr op='|' expr                                 # binaryExpr
  | expr op='&&' expr                                # binaryExpr
  | expr op='||' expr                                # binaryExpr
  ;

primary
  : NUMBER                                            # numberPrim
  | STRING                                            # stringPrim
  | name=ID '(' (callArg (COMMA callArg)*)? ')'       # callPrim
  | name=(ID | DIRECTIVE)                             # namePrim
  | '(' expr ')'                                      # parenPrim
  | '[' (expr (COMMA expr)*)? ']'                     # listPrim
  ;

callArg : (name=ID '=')? expr ;

// One index of a tensor slice: a:b:s, an integer, @reg, @vec(tile). A single alternative
// with optional parts keeps every decision LL(1) (the walker tells a:b from an integer).
slice
  : '@' expr                                                    # dynSlice
  | lo=expr? (c1=':' hi=expr? (c2=':' step=expr?)?)?            # rangeSlice
  ;

// ---- lexer ------------------------------------------------------------------------------------
// asm/lexer.cpp implements these rules by hand for speed (the generated lexer is its reference in
// tests/asm/lexer_test.cpp): change both together.
NL : '\r'? '\n' ;
// A comma may end a line: the statement continues on the next line.
COMMA : ',' ([ \t]* ((';' | '//') ~[\r\n]*)? '\r'? '\n')* ;
CONT : '\\' [ \t]* '\r'? '\n' -> skip ;
COMMENT : (';' | '//') ~[\r\n]* -> skip ;
WS : [ \t]+ -> skip ;

DOTTED : NAME_ '.' NAME_ ;
DIRECTIVE : '.' NAME_ ;
// Any run of digits and letters is one token, so `12abc` is reported as a bad number.
NUMBER : [0-9] [0-9a-zA-Z_]* ('.' [0-9] [0-9a-zA-Z_]*)? ([eE] [+-] [0-9]+)? ;
ID : NAME_ ;
STRING : '"' (~["\\\r\n] | '\\' ~[\r\n])* '"' ;
// Anything else is a token of its own, so the lexer never fails and the parser reports it.
ERRCHAR : . ;

fragment NAME_ : [a-zA-Z_] [a-zA-Z0-9_]* ;

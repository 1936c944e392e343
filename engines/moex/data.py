"""Chess games as character-level PGN and their board-state properties (BSPs).

Format (Karvonen's chess GPT): ``;1.e4 e5 2.Nf3 Nc6 ...`` over a 32-character vocabulary. Activations are
read at every "." (the character just before a white move), where the board is the position after Black's
last move. BSPs (Karvonen et al., SAE board-game benchmark): piece class x square one-hot (13 classes with
blank), the blank class and the squares' initial-state pieces masked, plus global properties.

Games: random legal games from python-chess with a cheap engine-free policy (captures, checks and
development favoured, seeded); real games from the Debian ``pychess`` package's PGN files where installed.
"""
from __future__ import annotations

import glob
import io
import random
from dataclasses import dataclass

import numpy as np

from .params import PYCHESS_DIR

try:  # python-chess; the UI never imports this module at start-up
    import chess
    import chess.pgn
except ModuleNotFoundError as e:  # pragma: no cover - pyproject depends on it
    raise ModuleNotFoundError("moex needs python-chess: pip install chess") from e

VOCAB = " #+-.0123456789;=BKNOQRabcdefghx"
assert len(VOCAB) == 32
STOI = {c: i for i, c in enumerate(VOCAB)}
DOT = STOI["."]
PYCHESS_GLOB = f"{PYCHESS_DIR}/**/*.pgn"

PIECES = ["pawn", "knight", "bishop", "rook", "queen", "king"]
# class index = signed piece value + 6: 0..5 black king..pawn, 6 blank, 7..12 white pawn..king
N_CLASSES = 13
BLANK = 6
GLOBAL_FEATURES = [
    "white can castle kingside", "white can castle queenside", "black can castle kingside",
    "black can castle queenside", "white is in check", "white has a pinned piece", "black has a pinned piece",
    "white has a passed pawn", "black has a passed pawn",
]


class PGNError(ValueError):
    """A PGN that cannot be replayed: names the move and why."""


def class_name(c: int) -> str:
    v = c - 6
    if v == 0:
        return "blank"
    return f"{'white' if v > 0 else 'black'} {PIECES[abs(v) - 1]}"


def _square_features() -> list[str]:
    return [f"{class_name(c)} on {chess.square_name(s)}" for s in range(64) for c in range(N_CLASSES)]


SQUARE_FEATURES = _square_features()  # index s * 13 + c


def board_classes(board: "chess.Board") -> np.ndarray:
    """(64,) class index per square."""
    out = np.full(64, BLANK, np.int8)
    for sq, p in board.piece_map().items():
        out[sq] = 6 + (p.piece_type if p.color == chess.WHITE else -p.piece_type)
    return out


def _passed(board: "chess.Board", color: bool) -> bool:
    own, opp = board.pieces(chess.PAWN, color), board.pieces(chess.PAWN, not color)
    for sq in own:
        f, r = chess.square_file(sq), chess.square_rank(sq)
        ahead = range(r + 1, 8) if color == chess.WHITE else range(0, r)
        if not any(chess.square(ff, rr) in opp for ff in (f - 1, f, f + 1) if 0 <= ff < 8 for rr in ahead):
            return True
    return False


def _pinned(board: "chess.Board", color: bool) -> bool:
    return any(board.is_pinned(color, sq) for sq in chess.SquareSet(board.occupied_co[color]))


def global_features(board: "chess.Board") -> np.ndarray:
    return np.array([
        board.has_kingside_castling_rights(chess.WHITE), board.has_queenside_castling_rights(chess.WHITE),
        board.has_kingside_castling_rights(chess.BLACK), board.has_queenside_castling_rights(chess.BLACK),
        board.is_check() and board.turn == chess.WHITE, _pinned(board, chess.WHITE), _pinned(board, chess.BLACK),
        _passed(board, chess.WHITE), _passed(board, chess.BLACK),
    ], bool)


INITIAL = board_classes(chess.Board())
# Masked BSPs: blank squares, and each square's piece of the initial position (trivial to predict).
SQUARE_MASK = np.ones((64, N_CLASSES), bool)
SQUARE_MASK[:, BLANK] = False
SQUARE_MASK[np.arange(64), INITIAL] = False
FEATURE_NAMES = [n for n, keep in zip(SQUARE_FEATURES, SQUARE_MASK.reshape(-1)) if keep] + GLOBAL_FEATURES
N_FEATURES = len(FEATURE_NAMES)


def bsp_vector(board: "chess.Board") -> np.ndarray:
    """Binary BSP vector (N_FEATURES,) of a position, in FEATURE_NAMES order."""
    onehot = np.zeros((64, N_CLASSES), bool)
    onehot[np.arange(64), board_classes(board)] = True
    return np.concatenate([onehot[SQUARE_MASK], global_features(board)])


# ----------------------------------------------------------------------------- games


def random_game(rng: random.Random, plies: int) -> list[str]:
    """SAN moves of a random legal game; captures x3, checks x2, development of minor pieces x2 (seeded)."""
    board, sans = chess.Board(), []
    for _ in range(plies):
        moves = list(board.legal_moves)
        if not moves:
            break
        w = []
        for m in moves:
            x = 3.0 if board.is_capture(m) else 1.0
            if board.gives_check(m):
                x *= 2.0
            p = board.piece_type_at(m.from_square)
            if p in (chess.KNIGHT, chess.BISHOP) and chess.square_rank(m.from_square) in (0, 7):
                x *= 2.0
            w.append(x)
        m = rng.choices(moves, w)[0]
        sans.append(board.san(m))
        board.push(m)
    return sans


def to_pgn_string(sans: list[str]) -> str:
    """Karvonen's format: ';1.e4 e5 2.Nf3 Nc6' (no spaces after the move numbers)."""
    parts = []
    for i, s in enumerate(sans):
        parts.append(f"{i // 2 + 1}.{s}" if i % 2 == 0 else s)
    return ";" + " ".join(parts)


def parse_pgn(text: str, max_plies: int = 400) -> list[str]:
    """SAN moves from a PGN movetext ('1. e4 e5 2. Nf3', ';1.e4 e5', with or without headers); PGNError if illegal."""
    if not isinstance(text, str) or not text.strip():
        raise PGNError("empty PGN: paste moves such as '1.e4 e5 2.Nf3 Nc6'")
    body = text.strip().lstrip(";")
    if any(c not in VOCAB and c not in " \n\r\t[]\"*/{}()!?abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
           for c in body):
        bad = sorted({c for c in body if not (c.isascii() and c.isprintable()) and c not in "\n\r\t"})
        if bad:
            raise PGNError(f"PGN contains characters that are not chess notation: {''.join(bad[:10])!r}")
    game = chess.pgn.read_game(io.StringIO(body))
    if game is None:
        raise PGNError("could not read a game from the PGN text")
    if game.errors:
        raise PGNError(f"illegal or unreadable move in the PGN: {game.errors[0]}")
    if game.board().fen() != chess.STARTING_FEN:
        raise PGNError("only games from the standard starting position are supported (the PGN sets a FEN)")
    sans, board = [], game.board()
    for mv in game.mainline_moves():
        sans.append(board.san(mv))
        board.push(mv)
        if len(sans) > max_plies:
            raise PGNError(f"the game has more than {max_plies} plies")
    if not sans:
        tokens = [t for t in body.replace(".", " ").split() if not t.isdigit()]
        raise PGNError(f"no legal move found in the PGN (first token {tokens[0]!r} is not a legal move)"
                       if tokens else "the PGN has no moves")
    return sans


def replay(sans: list[str]) -> list["chess.Board"]:
    """Board after each ply (index i = after i plies), validating every move."""
    board, out = chess.Board(), [chess.Board()]
    for i, s in enumerate(sans):
        try:
            board.push_san(s)
        except ValueError as e:
            raise PGNError(f"ply {i + 1} ({s!r}) is not legal here: {e}") from None
        out.append(board.copy(stack=False))
    return out


def dot_positions(pgn: str) -> list[tuple[int, int]]:
    """(character index of each '.', number of plies played before it)."""
    out, plies = [], 0
    for i, c in enumerate(pgn):
        if c == ".":
            out.append((i, plies))
            plies += 2
    return out


def encode(pgn: str, ctx: int) -> np.ndarray:
    ids = [STOI[c] for c in pgn[:ctx]]
    return np.array(ids + [STOI[" "]] * (ctx - len(ids)), np.int64)


def decode(ids) -> str:
    return "".join(VOCAB[int(i)] for i in ids)


@dataclass
class GameSet:
    """Encoded games (N, ctx), and per '.' position: (game, char index, BSP vector)."""

    pgns: list[str]
    ids: np.ndarray
    pos_game: np.ndarray
    pos_char: np.ndarray
    bsp: np.ndarray  # (P, N_FEATURES) bool

    def save(self, path) -> None:
        np.savez_compressed(path, pgns=np.array(self.pgns), ids=self.ids, pos_game=self.pos_game,
                            pos_char=self.pos_char, bsp=np.packbits(self.bsp, axis=1))

    @classmethod
    def load(cls, path) -> "GameSet":
        z = np.load(path)
        return cls([str(s) for s in z["pgns"]], z["ids"], z["pos_game"], z["pos_char"],
                   np.unpackbits(z["bsp"], axis=1, count=N_FEATURES).astype(bool))


def build_gameset(games: list[list[str]], ctx: int) -> GameSet:
    pgns, ids, pg, pc, bsp = [], [], [], [], []
    for g, sans in enumerate(games):
        s = to_pgn_string(sans)[:ctx]
        boards = replay(sans)
        pgns.append(s)
        ids.append(encode(s, ctx))
        for ci, plies in dot_positions(s):
            if plies <= len(sans):
                pg.append(g)
                pc.append(ci)
                bsp.append(bsp_vector(boards[plies]))
    return GameSet(pgns, np.stack(ids), np.array(pg, np.int64), np.array(pc, np.int64),
                   np.stack(bsp) if bsp else np.zeros((0, N_FEATURES), bool))


def synthetic_games(n: int, seed: int, min_plies: int = 20, max_plies: int = 40, progress=None) -> list[list[str]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        out.append(random_game(rng, rng.randint(min_plies, max_plies)))
        if progress is not None and i % 200 == 0:
            progress(i / n, f"generating games {i}/{n}")
    return out


def real_games(max_games: int = 200, min_plies: int = 10) -> list[tuple[str, list[str]]]:
    """(title, SAN moves) of full games from the standard start in Debian pychess's PGN files ([] if absent)."""
    import logging

    logging.getLogger("chess.pgn").setLevel(logging.CRITICAL)
    out: list[tuple[str, list[str]]] = []
    for path in sorted(glob.glob(PYCHESS_GLOB, recursive=True)):
        try:
            fh = open(path, encoding="utf-8", errors="replace")
        except OSError:
            continue
        with fh:
            while len(out) < max_games:
                try:
                    game = chess.pgn.read_game(fh)
                except Exception:  # noqa: BLE001 (a malformed study: skip the rest of the file)
                    break
                if game is None:
                    break
                if game.errors or "FEN" in game.headers or game.board().fen() != chess.STARTING_FEN:
                    continue
                sans, b = [], game.board()
                for mv in game.mainline_moves():
                    sans.append(b.san(mv))
                    b.push(mv)
                if len(sans) >= min_plies:
                    h = game.headers
                    out.append((f"{h.get('White', '?')} – {h.get('Black', '?')} ({h.get('Event', '?')})", sans))
        if len(out) >= max_games:
            break
    return out

"""Reference solution for specs/gradebook.md (validates the hidden tests only)."""


class Gradebook:
    def __init__(self) -> None:
        self._scores: dict[str, list[float]] = {}

    def record(self, name: str, score: float) -> None:
        if not 0 <= score <= 100:
            raise ValueError(f"score out of range: {score}")
        self._scores.setdefault(name, []).append(score)

    def scores(self, name: str) -> list[float]:
        return list(self._scores[name])

    def average(self, name: str) -> float:
        values = self._scores[name]
        return sum(values) / len(values)

    def students(self) -> list[str]:
        return sorted(self._scores)

    def top(self, n: int) -> list[tuple[str, float]]:
        if n < 0:
            raise ValueError(f"negative n: {n}")
        ranked = sorted(((name, self.average(name)) for name in self._scores),
                        key=lambda item: (-item[1], item[0]))
        return ranked[:n]

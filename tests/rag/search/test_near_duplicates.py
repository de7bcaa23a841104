"""Near-duplicate chunks of other files after the first (rag.search.near_duplicates)."""
from __future__ import annotations

from dataclasses import dataclass

from repo_helpers import indexed_engine

from rag.search.near_duplicates import demote_near_duplicates

TUTORIAL = """from fastapi import BackgroundTasks, FastAPI

app = FastAPI()


def write_notification(email: str, message=""):
    with open("log.txt", mode="w") as email_file:
        content = f"notification for {email}: {message}"
        email_file.write(content)


@app.post("/send-notification/{email}")
async def send_notification(email: str, background_tasks: BackgroundTasks):
    background_tasks.add_task(write_notification, email, message="some notification")
    return {"message": "Notification sent in the background"}
"""
# the Python 3.10 variant: one line in seven differs (its Jaccard with TUTORIAL is 6/8)
TUTORIAL_PY310 = TUTORIAL.replace('message=""', 'message: str | None = ""')
OTHER = """def render_page(template, context):
    compiled_template = compile_template(template)
    rendered_output = compiled_template.render(context)
    cleaned_output = strip_whitespace(rendered_output)
    return wrap_layout(cleaned_output, context.get("layout"))
"""


@dataclass
class Cand:
    path: str
    text: str
    score: float
    id: int = 0


def test_a_variant_of_a_better_ranked_chunk_goes_to_the_end_with_a_score_below_the_rest():
    ranked = [Cand("docs/t002.py", TUTORIAL, 1.0), Cand("docs/t002_py310.py", TUTORIAL_PY310, 0.9),
              Cand("lib/render.py", OTHER, 0.8)]
    out = demote_near_duplicates(ranked)
    assert [c.path for c in out] == ["docs/t002.py", "lib/render.py", "docs/t002_py310.py"]
    assert [c.score for c in out] == [1.0, 0.8, 0.8]


def test_chunks_of_one_file_distinct_texts_and_tiny_chunks_keep_their_places():
    tiny = "import os\nimport sys\n"
    ranked = [Cand("a.py", TUTORIAL, 1.0), Cand("a.py", TUTORIAL, 0.95),      # one file: not a family
              Cand("b.py", OTHER, 0.9), Cand("c.py", tiny, 0.8), Cand("d.py", tiny, 0.7)]
    assert demote_near_duplicates(ranked) == ranked


def test_a_pinned_chunk_is_never_demoted():
    ranked = [Cand("docs/t002.py", TUTORIAL, 1.0, 1), Cand("docs/t002_py310.py", TUTORIAL_PY310, 0.9, 2),
              Cand("lib/render.py", OTHER, 0.8, 3)]
    assert demote_near_duplicates(ranked, pinned={2}) == ranked


def test_only_the_window_is_compared():
    ranked = [Cand("a.py", TUTORIAL, 1.0), Cand("b.py", OTHER, 0.9), Cand("c.py", TUTORIAL_PY310, 0.8)]
    assert [c.path for c in demote_near_duplicates(ranked, window=2)] == ["a.py", "b.py", "c.py"]
    assert [c.path for c in demote_near_duplicates(ranked, window=3)] == ["a.py", "b.py", "c.py"]  # already last
    ranked = [Cand("a.py", TUTORIAL, 1.0), Cand("c.py", TUTORIAL_PY310, 0.9), Cand("b.py", OTHER, 0.8)]
    assert [c.path for c in demote_near_duplicates(ranked, window=1)] == ["a.py", "c.py", "b.py"]


def test_the_engine_shows_one_variant_of_a_tutorial_family(tmp_path):
    files = {"fastapi/background.py": "class BackgroundTasks:\n    def add_task(self, func, *args):\n"
                                      "        self.tasks.append((func, args))  # run after the response is sent\n",
             "docs_src/tutorial002.py": TUTORIAL,
             "docs_src/tutorial002_py310.py": TUTORIAL_PY310,
             "docs_src/tutorial002_an.py": TUTORIAL.replace("background_tasks: BackgroundTasks",
                                                            "background_tasks: Annotated[BackgroundTasks, None]")}
    with indexed_engine(tmp_path, files) as engine:
        paths = [s.path for s in engine.retrieve("How is a notification written to the log file by a background task?")]
    # without the demotion the three variants took the first three places, the implementation the fourth
    assert paths[0].startswith("docs_src/") and paths[1] == "fastapi/background.py"
    assert sorted(paths[2:]) == sorted(set(files) - {paths[0], "fastapi/background.py"})


def test_two_variants_the_question_names_are_both_shown(tmp_path):
    files = {"docs_src/bg/tutorial002.py": TUTORIAL, "docs_src/bg/tutorial002_py310.py": TUTORIAL_PY310,
             "app/log.py": "def write_log_message(message):\n    # writes the log message to the log file\n"
                           "    with open('log.txt', 'a') as log:\n        log.write(message)\n"}
    with indexed_engine(tmp_path, files) as engine:
        sources = engine.retrieve("How does docs_src/bg/tutorial002_py310.py differ from docs_src/bg/tutorial002.py "
                                  "when it writes the log message?", limit=3)
    # without the pinned exemption the second variant went below app/log.py, at its score: under the threshold
    assert {"docs_src/bg/tutorial002.py", "docs_src/bg/tutorial002_py310.py"} <= {s.path for s in sources}

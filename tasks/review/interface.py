"""The labeling interface a review project is made with, and the reviewer's choices it offers.

A task shows the conversation and two answers as "Answer 1" and "Answer 2"; which response of the pair is
which is drawn per task and kept in the warehouse only. Nothing of the judge is in a task. The choices' values
are what a pull maps back onto the pair, so a project whose interface was edited by hand is refused rather
than read with a mapping that may no longer hold.
"""

from __future__ import annotations

import hashlib
import re

PREFERENCE = "preference"  # the Choices control's name
ANSWER_1, ANSWER_2, TIE, BOTH_BAD = "answer_1", "answer_2", "tie", "both_bad"
CHOICE_VALUES = {"Answer 1": ANSWER_1, "Answer 2": ANSWER_2, "Tie": TIE, "Both bad": BOTH_BAD}

LABEL_CONFIG = """<View>
  <Header value="Conversation"/>
  <Paragraphs name="conversation" value="$conversation" layout="dialogue" nameKey="role" textKey="content"/>
  <View style="display: grid; grid-template-columns: 1fr 1fr; column-gap: 1em">
    <View>
      <Header value="Answer 1"/>
      <Text name="answer_1" value="$answer_1"/>
    </View>
    <View>
      <Header value="Answer 2"/>
      <Text name="answer_2" value="$answer_2"/>
    </View>
  </View>
  <Header value="Which answer is the better reply to the last user turn?"/>
  <Choices name="preference" toName="answer_1" choice="single-radio" required="true" showInline="true">
    <Choice value="Answer 1"/>
    <Choice value="Answer 2"/>
    <Choice value="Tie"/>
    <Choice value="Both bad"/>
  </Choices>
</View>"""

DESCRIPTION = ("Pairwise review: which answer is the better reply to the conversation? Answer 1 and Answer 2 are "
               "shown in an order drawn per task; the automatic judge's verdict is not shown.")


def normalized(config: str) -> str:
    """The interface without layout white space between tags (Label Studio may store it re-indented)."""
    return re.sub(r">\s+<", "><", (config or "").strip())


def interface_hash(config: str) -> str:
    return hashlib.blake2b(normalized(config).encode(), digest_size=8).hexdigest()


INTERFACE = interface_hash(LABEL_CONFIG)


def is_ours(config: str) -> bool:
    """Whether a project's labeling interface is the one review projects are made with."""
    return interface_hash(config) == INTERFACE

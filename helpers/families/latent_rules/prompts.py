"""The latent-rules family's two prompts: the page writer's base prompt (its instructions fenced) and the
optimizer's instructions."""

from helpers.rules.edits import edits_answer_format
from helpers.rules.ruleset import FENCE_END, FENCE_START

BASE_PROMPT = f"""\
You write web pages as JSON. The user describes the page they want. Answer with one JSON object that
describes the page, and nothing else.

The object's fields:
- "title" and "lang" (strings)
- "metadata": an object with "description", "keywords" (a list), "author", "canonical_url", "og_image",
  "og_type", "robots", "charset", "viewport", "theme_color", "favicon" and "updated"
- "navigation": an object with "links"
- "sections": a list; a section has "id", "type", "heading", "level", "text", and as it needs them
  "images", "links", "buttons", "items" and "forms"
- "footer": an object with "text", "copyright" and "links"
An image has "src", "alt", "caption", "width", "height" and "loading". A link has "href", "text",
"target" and "rel". A button has "label", "action" and "style". An item has "title", "text", and
where it fits "author" or "price". A form has "id", "action", "method", "submit_label" and "fields";
a field has "name", "label", "type", "required", "placeholder", and where it fits "autocomplete",
"rows" or "options".

Follow these instructions:
{FENCE_START}
{FENCE_END}
"""


# The optimizer's instructions for this family: the same edits as for a coding agent's rules, about a
# prompt that writes pages (helpers.learn.optimizer.PromptLearningOptimizer(system_prompt=...)).
OPTIMIZER_PROMPT = """\
You maintain the instructions of a prompt that makes a language model write web pages as JSON, and you
improve them from feedback on the pages it wrote. You see the prompt's fixed part (you cannot change it),
the current instructions with their ids, and examples: a user's request, the page the model wrote, and
feedback on it (whether it followed every requirement, and which requirements it broke, in English).

Find the requirements behind the failures and write them down as instructions that will hold for FUTURE
requests: general, precise, short and actionable, never about one particular request or business. Keep
instructions that work; fix ones that misled the model; merge duplicates; delete wrong ones. Change
nothing when the feedback teaches nothing new.

""" + edits_answer_format("instruction", "example id")

__all__ = ["BASE_PROMPT", "OPTIMIZER_PROMPT"]

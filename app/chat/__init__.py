"""The open chat, with no widgets: `Chat` (app.chat.chat) and the flows beside it.

    turns          send → plan/admission → streaming → finished, refused or failed
    conversations  the Store and the sidebar's commands (new, open, rename, delete, export)
    summary        the summary of earlier turns
    notes          the pinned notes kept in every prompt
    presets        the preset library and the chat's pick
    models         loading a model in the worker, Cancel, the LoadReport
    backend        settings, local or remote backend, the API key
    memory         the monitor's probe, the "what if" projection, the diagnostics report
    attachments    files attached to the next message, read off the GUI thread
    context_count  how full the context window is, recounted when the next prompt changes

`open_chat` builds a Chat and its flows; the window wires widgets to them and calls start().
"""

from app.chat.attachments import AttachmentFlow
from app.chat.backend import BackendFlow
from app.chat.chat import Chat
from app.chat.context_count import ContextCount
from app.chat.conversations import ConversationFlow
from app.chat.memory import MemoryFlow
from app.chat.models import ModelFlow
from app.chat.notes import NotesFlow
from app.chat.presets import PresetFlow
from app.chat.summary import SummaryFlow
from app.chat.turns import TurnFlow

__all__ = ["Chat", "open_chat"]


def open_chat(settings, store=None, device_preference: str = "auto", worker=None, server_monitor=None,
              parent=None) -> Chat:
    """A Chat (see Chat.__init__ for the arguments) with its flows attached as chat.turns,
    chat.conversations, chat.summaries, chat.notes, chat.presets, chat.models, chat.backend,
    chat.memory, chat.attachments and chat.context; not started."""
    chat = Chat(settings, store, device_preference, worker, server_monitor, parent)
    chat.turns = TurnFlow(chat)
    chat.conversations = ConversationFlow(chat)
    chat.summaries = SummaryFlow(chat)
    chat.notes = NotesFlow(chat)
    chat.presets = PresetFlow(chat)
    chat.models = ModelFlow(chat)
    chat.backend = BackendFlow(chat)
    chat.memory = MemoryFlow(chat)
    chat.attachments = AttachmentFlow(chat)
    chat.context = ContextCount(chat)
    return chat

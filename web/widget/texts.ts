/**
 * Every text the widget writes itself, per language. The owner's title, greeting and offline message
 * stay as the owner wrote them; while one is still Parley's default (`defaultTexts`), the widget
 * shows the default of its own language. Adding a language: one more entry here.
 */
const en = {
  title: 'Chat with us',
  greeting: 'Hi! How can we help you today?',
  offlineMessage: "We're away right now. Leave a message and your e-mail, and we'll get back to you.",
  open: (title: string) => `Open chat: ${title}`,
  close: 'Close chat',
  closeTitled: (title: string) => `Close chat: ${title}`,
  unread: (n: number) => `${n} new`,
  name: 'Your name',
  email: 'E-mail',
  phone: 'Phone',
  optional: ' (optional)',
  start: 'Start chat',
  fillRequired: 'Please fill in the required fields.',
  unavailable: 'The chat is not available right now.',
  tooMany: (seconds: number) => `Too many attempts. Please wait ${seconds} seconds.`,
  messages: 'Messages',
  placeholder: 'Write a message…',
  message: 'Message',
  attach: 'Attach a file',
  removeAttachment: 'Remove attachment',
  send: 'Send',
  historyFailed: 'Could not load the conversation',
  notSent: 'The message was not sent',
  checkFields: 'Please check the fields.',
  failed: 'Something went wrong. Please try again.',
  image: 'image',
  file: 'file',
  kb: (n: number) => `${n} KB`,
  typing: (title: string) => `${title} is typing…`,
};

export type WidgetTexts = typeof en;

const ru: WidgetTexts = {
  title: 'Напишите нам',
  greeting: 'Здравствуйте! Чем можем помочь?',
  offlineMessage: 'Сейчас мы не на связи. Оставьте сообщение и адрес почты — мы вам ответим.',
  open: (title) => `Открыть чат: ${title}`,
  close: 'Закрыть чат',
  closeTitled: (title) => `Закрыть чат: ${title}`,
  unread: (n) => `Новых: ${n}`,
  name: 'Ваше имя',
  email: 'Эл. почта',
  phone: 'Телефон',
  optional: ' (необязательно)',
  start: 'Начать чат',
  fillRequired: 'Заполните обязательные поля.',
  unavailable: 'Чат сейчас недоступен.',
  tooMany: (seconds) => `Слишком много попыток. Подождите ${seconds} с.`,
  messages: 'Сообщения',
  placeholder: 'Напишите сообщение…',
  message: 'Сообщение',
  attach: 'Прикрепить файл',
  removeAttachment: 'Убрать вложение',
  send: 'Отправить',
  historyFailed: 'Не удалось загрузить переписку',
  notSent: 'Сообщение не отправлено',
  checkFields: 'Проверьте заполненные поля.',
  failed: 'Что-то пошло не так. Попробуйте ещё раз.',
  image: 'изображение',
  file: 'файл',
  kb: (n) => `${n} КБ`,
  typing: (title) => `${title} печатает…`,
};

const TEXTS: Record<string, WidgetTexts> = { en, ru };

/** The widget's language: the setting when fixed, else the first of the browser's it speaks, else English. */
export function widgetLanguage(setting: string | undefined, browser: readonly string[]): string {
  if (setting && setting !== 'auto' && TEXTS[setting]) return setting;
  for (const tag of browser) {
    const primary = tag.toLowerCase().split('-')[0];
    if (TEXTS[primary]) return primary;
  }
  return 'en';
}

export function textsFor(language: string): WidgetTexts {
  return TEXTS[language] ?? en;
}

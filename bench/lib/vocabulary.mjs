// Words the generated account is made of: customer names, message texts, tags. Search scenarios
// query these words, so their frequencies matter: some are common (in ~10% of messages), some
// rare (well under 1%), and some customer names are shared by hundreds of customers.

export const FIRST_NAMES = [
  'Olivia', 'Liam', 'Emma', 'Noah', 'Amelia', 'Oliver', 'Ava', 'Elijah', 'Sophia', 'Mateo', 'Isabella', 'Lucas', 'Mia', 'Levi',
  'Charlotte', 'Ezra', 'Harper', 'James', 'Luna', 'Asher', 'Evelyn', 'Leo', 'Gianna', 'Henry', 'Ella', 'Hudson', 'Aurora',
  'Ethan', 'Nora', 'Muhammad', 'Zoë', 'Jack', 'Chloé', 'Daniel', 'Mila', 'Benjamin', 'Hazel', 'Sebastián', 'Violet', 'Michael',
  'Ivy', 'Julián', 'Eleanor', 'Owen', 'Lily', 'Samuel', 'Penelope', 'Kai', 'Elena', 'Wyatt', 'Olena', 'Taras', 'Iryna', 'Dmytro',
  'Sofía', 'Andrés', 'Yuki', 'Haruto', 'Anaïs', 'Björn', 'Ingrid', 'Søren', 'Łukasz', 'Zofia', 'Mehmet', 'Elif', 'Priya', 'Arjun',
];
export const LAST_NAMES = [
  'Smith', 'Johnson', 'Williams', 'Brown', 'Jones', 'Garcia', 'Miller', 'Davis', 'Rodriguez', 'Martinez', 'Hernandez', 'Lopez',
  'Gonzalez', 'Wilson', 'Anderson', 'Thomas', 'Taylor', 'Moore', 'Jackson', 'Martin', 'Lee', 'Perez', 'Thompson', 'White',
  'Harris', 'Sanchez', 'Clark', 'Ramirez', 'Lewis', 'Robinson', 'Walker', 'Young', 'Allen', 'King', 'Wright', 'Scott', 'Torres',
  'Nguyen', 'Hill', 'Flores', 'Green', 'Adams', 'Nelson', 'Baker', 'Hall', 'Rivera', 'Campbell', 'Mitchell', 'Carter', 'Roberts',
  'Kovalenko', 'Shevchenko', 'Bondarenko', 'Müller', 'Schäfer', 'Dubois', 'Lefèvre', 'Rossi', 'Ferrari', 'Novák', 'Kowalski',
  'Yılmaz', 'Sato', 'Suzuki', 'Tanaka', 'Patel', 'Sharma', 'Silva', 'Santos', 'Costa', 'Jensen', 'Nielsen', 'Andersson',
];
export const EMAIL_DOMAINS = ['example.com', 'mail.example', 'inbox.example.org', 'post.example.net', 'company.example'];

/** Customer messages: `{n}` an order number, `{item}` a product. */
export const INCOMING = [
  'Hello! Where is my order #{n}? It was supposed to arrive yesterday',
  'Hi, do you have the {item} in stock?',
  'How much is delivery to Kyiv for the {item}?',
  'I would like to return the {item}, it does not fit',
  'Can I get a refund for order #{n}?',
  'Thank you, the parcel arrived in perfect condition',
  'Is there a discount if I buy two?',
  'What sizes do you have for the {item}?',
  'The tracking number does not work, please check order #{n}',
  'Can you send me an invoice for order #{n}? We pay by bank transfer',
  'Good morning, is the shop open on Sunday?',
  'I paid for order #{n} but have not received a confirmation',
  'Does the {item} come with a warranty?',
  'Please cancel my order #{n}',
  'ok',
  'thanks!',
  'Could you call me back? My number is in the profile',
  'Is it possible to pick up the {item} at the warehouse?',
  'The {item} arrived damaged, what should I do?',
  'Do you ship abroad? I live in Kraków',
];
/** Employee answers. */
export const OUTGOING = [
  'Hello! Let me check order #{n} for you',
  'Yes, the {item} is in stock, we can ship it today',
  'Delivery usually takes two to three working days',
  'Your refund has been processed, it may take up to five days',
  'Here is the tracking number for order #{n}',
  'We are open every day from nine to eight',
  'Sorry for the delay, the courier picked up the parcel this morning',
  'The invoice for order #{n} is attached',
  'Of course, I have cancelled order #{n}',
  'The warranty on the {item} is twelve months',
  'Thank you for your patience!',
  'Could you send a photo of the damage please?',
];
export const ITEMS = [
  'blue hoodie', 'running shoes', 'leather wallet', 'coffee grinder', 'wireless headphones', 'yoga mat', 'backpack', 'desk lamp',
  'winter jacket', 'phone case', 'ceramic mug', 'gift card', 'sunglasses', 'linen shirt', 'kettle', 'smart watch', 'umbrella',
];
export const TAGS = ['vip', 'wholesale', 'returning', 'complaint', 'delivery', 'refund', 'b2b', 'newsletter'];
export const ATTACHMENTS = [
  (n) => ({ type: 'photo', url: `https://cdn.example.com/photos/${n}.jpg`, text: `IMG_${n}.jpg`, filesize: 80_000 + (n % 900_000) }),
  (n) => ({ type: 'doc', url: `https://cdn.example.com/docs/invoice-${n}.pdf`, text: `invoice-${n}.pdf`, filesize: 30_000 + (n % 200_000) }),
  (n) => ({ type: 'video', url: `https://cdn.example.com/video/${n}.mp4`, text: `VID_${n}.mp4`, filesize: 2_000_000 + (n % 9_000_000) }),
];

/** Message-search queries (words of the texts above: common, medium and rare, one and two words). */
export const MESSAGE_QUERIES = ['order', 'refund', 'warranty', 'hoodie', 'tracking number', 'invoice', 'krakow', 'damaged', 'deliv', 'grinder', 'sunday shop'];
/** Customer-search queries: name prefixes, a full name, e-mail and phone fragments. */
export const CUSTOMER_QUERIES = ['olivia', 'kovalenko', 'mül', 'emma smith', 'sato', 'priya', 'zoe', 'inbox.example', '555 01', 'liam garcia'];
